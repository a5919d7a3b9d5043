ready
{"items": 21184, "unit": "images", "seconds": 8.001876476000007, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
