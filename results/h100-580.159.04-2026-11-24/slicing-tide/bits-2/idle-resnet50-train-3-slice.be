ready
{"items": 11776, "unit": "images", "seconds": 8.030902579000013, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
