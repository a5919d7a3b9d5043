ready
{"items": 26368, "unit": "images", "seconds": 21.02738297799999, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
