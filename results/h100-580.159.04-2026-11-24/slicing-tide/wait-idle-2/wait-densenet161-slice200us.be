ready
{"items": 45952, "unit": "images", "seconds": 21.032425351, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
