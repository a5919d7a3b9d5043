ready
{"items": 19968, "unit": "images", "seconds": 8.006671683000036, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
