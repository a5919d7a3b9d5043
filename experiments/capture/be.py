"""A BE tenant: bf16 matmuls of 8192 x 8192 in a loop while the file
named by its argument exists; prints how many it ran."""
import os
import sys
import torch

a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
n = 0
while os.path.exists(sys.argv[1]):
    for _ in range(20):
        b = a @ a
    torch.cuda.synchronize()
    n += 20
print("matmuls", n)
