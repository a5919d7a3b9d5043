ready
{"items": 27200, "unit": "images", "seconds": 21.013108278000004, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
