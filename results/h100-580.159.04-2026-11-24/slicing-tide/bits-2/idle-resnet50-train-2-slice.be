ready
{"items": 11904, "unit": "images", "seconds": 8.035414841999994, "info": {"batch": 64, "dtype": "bf16 autocast", "optimizer": "SGD", "params": 25557032}}
