"""Compares two saved tensors: prints max abs difference and bitwise equality as JSON."""
import json, sys
import torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
print(json.dumps({"max_abs_diff": (a - b).abs().max().item(), "bitwise_equal": bool(torch.equal(a, b)),
                  "shape": list(a.shape)}))
