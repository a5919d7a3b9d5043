ready
{"items": 15488, "unit": "images", "seconds": 8.012690425000017, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
