ready
{"items": 40512, "unit": "images", "seconds": 21.006410205999998, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
