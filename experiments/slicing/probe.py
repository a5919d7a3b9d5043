#!/usr/bin/env python3
"""probe: an LS tenant whose requests are one tiny kernel each, to measure how
long a request waits behind a BE's work on the GPU (issue 22, part 3).

Requests arrive open-loop (Poisson, --rate a second); each is one add over
--elems floats and a synchronize, its latency taken from the launch to the
synchronize's return (not from its arrival: the probe never queues behind
itself). Alone on the GPU a request takes tens of microseconds; beside a BE,
what it waits for is the BE's work already on the GPU.

Prints "ready" after a warm-up, waits for a line on stdin, runs --duration
seconds, and prints one JSON line: the latencies in microseconds.
"""
import argparse
import json
import random
import sys
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--rate", type=float, default=200)
ap.add_argument("--duration", type=float, default=20)
ap.add_argument("--elems", type=int, default=1 << 16)
ap.add_argument("--seed", type=int, default=1)
a = ap.parse_args()

x = torch.zeros(a.elems, device="cuda")
s = torch.cuda.current_stream()
for _ in range(200):
    x.add_(1)
    s.synchronize()
print("ready", flush=True)
sys.stdin.readline()

rng = random.Random(a.seed)
lat = []
t0 = time.perf_counter()
at = 0.0
while True:
    at += rng.expovariate(a.rate)
    if at >= a.duration:
        break
    wait = at - (time.perf_counter() - t0)
    if wait > 3e-4:
        time.sleep(wait - 2e-4)
    while time.perf_counter() - t0 < at:
        pass
    b = time.perf_counter()
    x.add_(1)
    s.synchronize()
    lat.append((time.perf_counter() - b) * 1e6)
print(json.dumps({"latencies_us": lat, "requests": len(lat), "rate": a.rate, "elems": a.elems}), flush=True)
