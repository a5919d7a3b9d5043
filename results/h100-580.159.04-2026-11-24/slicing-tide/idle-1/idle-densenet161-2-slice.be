ready
{"items": 18048, "unit": "images", "seconds": 8.021457553000005, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
