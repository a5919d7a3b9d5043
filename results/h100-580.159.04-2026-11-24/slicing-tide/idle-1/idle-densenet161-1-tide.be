ready
{"items": 20352, "unit": "images", "seconds": 8.009415904000008, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
