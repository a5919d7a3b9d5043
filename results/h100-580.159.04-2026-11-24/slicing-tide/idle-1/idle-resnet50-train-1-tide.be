ready
{"items": 14656, "unit": "images", "seconds": 8.026810164000011, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
