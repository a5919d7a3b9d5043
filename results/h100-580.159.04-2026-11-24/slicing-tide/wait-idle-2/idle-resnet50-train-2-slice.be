ready
{"items": 15552, "unit": "images", "seconds": 8.01206892800002, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
