ready
{"items": 27456, "unit": "images", "seconds": 21.004753507999993, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
