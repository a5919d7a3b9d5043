ready
{"items": 12352, "unit": "images", "seconds": 8.023734939999997, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
