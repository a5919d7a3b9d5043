ready
{"items": 19712, "unit": "images", "seconds": 8.021211675000018, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
