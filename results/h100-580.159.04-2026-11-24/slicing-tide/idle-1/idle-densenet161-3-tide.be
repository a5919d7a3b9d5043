ready
{"items": 18496, "unit": "images", "seconds": 8.017716296000003, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
