ready
{"items": 14528, "unit": "images", "seconds": 8.032275642999991, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
