ready
{"items": 14016, "unit": "images", "seconds": 8.032037454999994, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
