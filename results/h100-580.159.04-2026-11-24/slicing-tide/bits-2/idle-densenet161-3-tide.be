ready
{"items": 18880, "unit": "images", "seconds": 8.008334788000013, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
