ready
{"items": 17536, "unit": "images", "seconds": 8.004737111999987, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
