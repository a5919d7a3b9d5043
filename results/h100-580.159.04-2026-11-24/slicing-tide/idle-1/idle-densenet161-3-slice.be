ready
{"items": 18432, "unit": "images", "seconds": 8.017596878999996, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
