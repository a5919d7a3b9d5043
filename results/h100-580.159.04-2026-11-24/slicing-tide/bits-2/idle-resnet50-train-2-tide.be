ready
{"items": 12480, "unit": "images", "seconds": 8.012737252999983, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
