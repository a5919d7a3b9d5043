ready
{"items": 18816, "unit": "images", "seconds": 8.003926627999988, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
