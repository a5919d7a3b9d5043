ready
{"items": 15424, "unit": "images", "seconds": 8.012901803999966, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
