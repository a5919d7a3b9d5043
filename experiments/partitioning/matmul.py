"""A PyTorch bf16 matmul loop that knows nothing of carve.

Runs for --seconds and prints one JSON line with the median and p99 time
per matmul over the middle of the run; with --trace it also writes every
iteration's wall-clock time and duration, for following a resize.
"""
import argparse, json, time
import torch

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=4)
p.add_argument("--n", type=int, default=8192)
p.add_argument("--label", default="matmul")
p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"],
               help="float32 runs on the CUDA cores (TF32 off), bfloat16 on the tensor cores")
p.add_argument("--trace", default="")
p.add_argument("--start-at", type=float, default=0, help="wall-clock second to begin the timed loop at")
a = p.parse_args()

torch.backends.cuda.matmul.allow_tf32 = False
dt = getattr(torch, a.dtype)
a_ = torch.randn(a.n, a.n, device="cuda", dtype=dt)
b_ = torch.randn(a.n, a.n, device="cuda", dtype=dt)
c_ = a_ @ b_
torch.cuda.synchronize()
while time.time() < a.start_at:
    time.sleep(0.001)
recs = []
t0 = time.time()
while time.time() - t0 < a.seconds:
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t = time.time()
    s.record(); c_ = a_ @ b_; e.record()
    e.synchronize()
    recs.append((t, s.elapsed_time(e)))
mid = sorted(ms for t, ms in recs if 0.15 * a.seconds <= t - t0 <= 0.85 * a.seconds)
print(json.dumps({"label": a.label, "kernels": len(recs), "samples": len(mid),
                  "median_ms": mid[len(mid) // 2], "p99_ms": mid[int(len(mid) * 0.99)], "min_ms": mid[0]}), flush=True)
if a.trace:
    with open(a.trace, "w") as f:
        json.dump([{"t": t, "ms": ms} for t, ms in recs], f)
