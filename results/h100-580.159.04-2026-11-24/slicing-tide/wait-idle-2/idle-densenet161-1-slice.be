ready
{"items": 21376, "unit": "images", "seconds": 8.001025843000036, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
