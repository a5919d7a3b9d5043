ready
{"items": 19968, "unit": "images", "seconds": 8.029704599000013, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
