ready
{"items": 32512, "unit": "images", "seconds": 21.026407627000026, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
