ready
{"items": 12672, "unit": "images", "seconds": 8.014175451, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
