ready
{"items": 40064, "unit": "images", "seconds": 21.029787355999986, "info": {"batch": 64, "dtype": "fp16", "params": 28681000}}
