ready
{"items": 15936, "unit": "images", "seconds": 8.02785918699999, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
