ready
{"items": 17344, "unit": "images", "seconds": 8.011159082999995, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
