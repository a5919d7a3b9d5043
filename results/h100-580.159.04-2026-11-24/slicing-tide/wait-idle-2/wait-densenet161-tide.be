ready
{"items": 43904, "unit": "images", "seconds": 21.000312683000004, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
