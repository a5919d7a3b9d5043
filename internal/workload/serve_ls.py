"""A latency-sensitive service for carve bench serve.

Builds a model with random weights at batch 1 (torchvision resnet50 or
mobilenet_v3_large, or bert-base at sequence 128), in fp16, run eagerly or
replayed from a CUDA graph; prints "ready", waits for a line on stdin, then
serves requests arriving open-loop (Poisson at --rate per second, or on/off:
100 ms at twice the rate, 100 ms idle) for --duration seconds, one at a time
in arrival order, and prints one JSON line: each request's latency from its
arrival (queueing included) to its result, in ms.
"""
import argparse, json, random, sys, time

p = argparse.ArgumentParser()
p.add_argument("--model", default="resnet50")
p.add_argument("--mode", default="graph", choices=["graph", "eager"])
p.add_argument("--rate", type=float, default=400)
p.add_argument("--pattern", default="poisson", choices=["poisson", "onoff"])
p.add_argument("--duration", type=float, default=8)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()

import torch

torch.backends.cudnn.benchmark = True
dev = "cuda"
if a.model == "bert":
    from transformers import BertConfig, BertModel
    m = BertModel(BertConfig()).eval().to(dev).half()
    x = torch.randint(0, 30000, (1, 128), device=dev)
    run = lambda: m(input_ids=x).last_hidden_state
else:
    import torchvision
    m = getattr(torchvision.models, a.model)(weights=None).eval().to(dev).half()
    x = torch.randn(1, 3, 224, 224, device=dev, dtype=torch.half)
    run = lambda: m(x)

with torch.no_grad():
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(10):
            run()
    torch.cuda.current_stream().wait_stream(s)
    if a.mode == "graph":
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = run()
        infer = g.replay
    else:
        infer = run
    for _ in range(20):
        infer()
    torch.cuda.synchronize()

rng = random.Random(a.seed)
arrivals, t = [], 0.0
while a.rate > 0:
    if a.pattern == "poisson":
        t += rng.expovariate(a.rate)
    else:  # on/off: 100 ms at twice the rate, 100 ms without requests
        t += rng.expovariate(2 * a.rate)
        if t % 0.2 >= 0.1:
            t += 0.2 - t % 0.2
    if t >= a.duration:
        break
    arrivals.append(t)

print("ready", flush=True)
sys.stdin.readline()
if not arrivals:  # an LS tenant that gets no request, beside the BE
    time.sleep(a.duration)
lat = []
with torch.no_grad():
    t0 = time.perf_counter()
    for at in arrivals:
        wait = at - (time.perf_counter() - t0)
        if wait > 3e-4:
            time.sleep(wait - 2e-4)
        while time.perf_counter() - t0 < at:
            pass
        infer()
        torch.cuda.current_stream().synchronize()
        lat.append((time.perf_counter() - t0 - at) * 1e3)
print(json.dumps({"latencies_ms": lat, "requests": len(arrivals)}), flush=True)
