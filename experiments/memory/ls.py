"""An LS service for the memory experiment: resnet50 at batch 1 (fp16,
random weights, from a CUDA graph), requests arriving open-loop (Poisson)
at --rate per second for --seconds; prints one JSON line with the latency
from arrival to result (p50, p99), requests served and requests failed."""
import argparse, json, random, time
import torch, torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--rate", type=float, default=200)
ap.add_argument("--seconds", type=float, default=10)
ap.add_argument("--label", default="")
a = ap.parse_args()
m = torchvision.models.resnet50(weights=None).eval().cuda().half()
x = torch.randn(1, 3, 224, 224, device="cuda", dtype=torch.half)
s = torch.cuda.Stream()
with torch.no_grad(), torch.cuda.stream(s):
    for _ in range(3):
        m(x)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = m(x)
torch.cuda.synchronize()
print("ready", flush=True)
rng = random.Random(1)
lat, failed = [], 0
start = time.perf_counter()
t = start
while t - start < a.seconds:
    t += rng.expovariate(a.rate)
    now = time.perf_counter()
    if t > now:
        time.sleep(t - now)
    try:
        g.replay()
        torch.cuda.synchronize()
        lat.append((time.perf_counter() - t) * 1000)
    except Exception as e:  # a failed request is counted, not fatal
        failed += 1
        print("request failed:", e, flush=True)
lat.sort()
q = lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))], 3) if lat else None
print(json.dumps({"label": a.label, "rate": a.rate, "served": len(lat), "failed": failed, "p50_ms": q(0.5), "p99_ms": q(0.99)}), flush=True)
