ready
{"items": 13952, "unit": "images", "seconds": 8.004333372999994, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
