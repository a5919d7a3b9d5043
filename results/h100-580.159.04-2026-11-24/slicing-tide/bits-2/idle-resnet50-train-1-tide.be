ready
{"items": 12224, "unit": "images", "seconds": 8.016768406000011, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
