ready
{"items": 32128, "unit": "images", "seconds": 21.001569495, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
