ready
{"items": 30976, "unit": "images", "seconds": 21.025549533000003, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
