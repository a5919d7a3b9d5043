# The enforcement benchmark's PyTorch victim: torch.matmul of two n x n
# float32 matrices (TF32 off, so CUDA cores as in carve's sgemm), checked
# against a float64 CPU product on a small size, then timed reps times with
# CUDA events after a warm-up. Prints the times (ms) as a JSON array.
import argparse
import json
import sys

import torch

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=2048)
p.add_argument("--reps", type=int, default=1000)
a = p.parse_args()
torch.backends.cuda.matmul.allow_tf32 = False
g = torch.Generator(device="cuda").manual_seed(7)
x = torch.rand(a.n, a.n, device="cuda", generator=g) * 2 - 1
y = torch.rand(a.n, a.n, device="cuda", generator=g) * 2 - 1
xs, ys = x[:128, :128].contiguous(), y[:128, :128].contiguous()
ref = xs.double().cpu() @ ys.double().cpu()
err = float(((xs @ ys).double().cpu() - ref).norm() / ref.norm())
if err > 1e-5:
    sys.exit(f"torch.matmul check against the CPU failed: relative error {err}")
out = torch.empty(a.n, a.n, device="cuda")
torch.matmul(x, y, out=out)
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ms = []
for _ in range(a.reps):
    start.record()
    torch.matmul(x, y, out=out)
    end.record()
    end.synchronize()
    ms.append(start.elapsed_time(end))
json.dump(ms, sys.stdout)
