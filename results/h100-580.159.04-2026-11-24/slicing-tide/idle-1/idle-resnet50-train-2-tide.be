ready
{"items": 13632, "unit": "images", "seconds": 8.022701637000011, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
