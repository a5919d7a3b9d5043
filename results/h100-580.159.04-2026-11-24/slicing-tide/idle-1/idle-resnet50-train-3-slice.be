ready
{"items": 13760, "unit": "images", "seconds": 8.000849523999989, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
