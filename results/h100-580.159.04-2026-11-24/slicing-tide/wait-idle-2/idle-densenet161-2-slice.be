ready
{"items": 21056, "unit": "images", "seconds": 8.001105607999989, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
