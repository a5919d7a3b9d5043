ready
{"items": 14912, "unit": "images", "seconds": 8.01625478599999, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
