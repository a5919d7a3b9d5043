ready
{"items": 17216, "unit": "images", "seconds": 8.005471697000019, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
