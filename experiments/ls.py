"""An LS service for the experiments (memory, multigpu): resnet50 at batch 1 (fp16,
random weights, from a CUDA graph) on cuda:0, requests arriving open-loop
(Poisson) at --rate per second. It serves from when --wait-file exists (at
once without one) until --done-file exists or --seconds have passed, and
prints one JSON line: the latency from arrival to result (p50, p99), the
share of requests within --slo-ms (if given), requests served and failed.
With --trace it also writes each request there, one JSON line each: its
arrival (Unix time, s) and latency (ms), for a run split into phases."""
import argparse, json, os, random, time
import torch, torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--rate", type=float, default=200)
ap.add_argument("--seconds", type=float, default=15)
ap.add_argument("--slo-ms", type=float, default=0)
ap.add_argument("--wait-file", default="")
ap.add_argument("--done-file", default="")
ap.add_argument("--label", default="")
ap.add_argument("--trace", default="")
a = ap.parse_args()
torch.cuda.set_device(0)
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
deadline = time.time() + 120
done = lambda: a.done_file and os.path.exists(a.done_file)
while a.wait_file and not os.path.exists(a.wait_file) and not done() and time.time() < deadline:
    time.sleep(0.01)
if a.wait_file and not os.path.exists(a.wait_file):
    print(json.dumps({"label": a.label, "error": "the job it serves beside never became ready"}), flush=True)
    raise SystemExit(1)
rng = random.Random(1)
lat, arrivals, failed = [], [], 0
start = time.perf_counter()
wall = time.time() - start  # perf_counter to Unix time
t = start
while t - start < a.seconds and not done():
    t += rng.expovariate(a.rate)
    now = time.perf_counter()
    if t > now:
        time.sleep(t - now)
    try:
        g.replay()
        torch.cuda.synchronize()
        lat.append((time.perf_counter() - t) * 1000)
        arrivals.append(t)
    except Exception as e:  # a failed request is counted, not fatal
        failed += 1
        print("request failed:", e, flush=True)
served_s = time.perf_counter() - start
if a.trace:
    with open(a.trace, "w") as f:
        for t, ms in zip(arrivals, lat):
            f.write(json.dumps({"t": round(wall + t, 4), "ms": round(ms, 3)}) + "\n")
att = sum(1 for v in lat if v <= a.slo_ms) / len(lat) if lat and a.slo_ms else None
lat.sort()
q = lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))], 3) if lat else None
print(json.dumps({"label": a.label, "rate": a.rate, "seconds": round(served_s, 2), "served": len(lat), "failed": failed,
                  "p50_ms": q(0.5), "p99_ms": q(0.99), "slo_ms": a.slo_ms or None,
                  "slo_attainment": round(att, 4) if att is not None else None}), flush=True)
