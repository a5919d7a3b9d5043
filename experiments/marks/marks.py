"""Marked requests (carve run --mark, shim/nvtx.c) against the requests the
program times itself. An LS server (efficientnet_b0 fp16 batch 1 replayed
from a CUDA graph, cuDNN's benchmark mode off) serves Poisson requests at
--rate for --serve seconds, one at a time; with --marks 1 each request is
an NVTX range "request" (torch.cuda.nvtx.range_push and range_pop around
its replay and synchronize). It times each itself: its service, from just
before its push to just after its pop, and its latency, from its arrival.
At the end it reads its own row of `carve ls -o json`, then times --pairs
push/pop pairs with no GPU work, of "request" and of "other" (what a pair
costs, timed or not), and prints one JSON line: its own counts and
quantiles, the row's marked_requests and busy periods, and the pairs' cost.
Usage, under carve run --ls [--mark request]:
python3 marks.py --carve bin/carve [--rate 540 --serve 8 --marks 1 --pairs 100000 --arm NAME]
"""
import argparse, json, os, random, subprocess, sys, time

import torch, torchvision


def q(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))] if s else 0


def own_row(carve):
    rows = json.loads(subprocess.run([carve, "ls", "-o", "json"], capture_output=True, text=True, check=True).stdout)
    return next((r for r in rows if r.get("pid") == os.getpid()), {})


def main():
    a = argparse.ArgumentParser()
    a.add_argument("--carve", required=True)
    a.add_argument("--rate", type=float, default=540)
    a.add_argument("--serve", type=float, default=8)
    a.add_argument("--marks", type=int, default=1)
    a.add_argument("--arm", default="")
    a.add_argument("--ready", default="", help="a file made once the graph is captured")
    a.add_argument("--pairs", type=int, default=100000)
    a = a.parse_args()
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    clock = time.perf_counter_ns
    torch.backends.cudnn.benchmark = False
    m = torchvision.models.efficientnet_b0(weights=None).eval().cuda().half()
    x = torch.randn(1, 3, 224, 224, device="cuda", dtype=torch.half)
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            m(x)
    for _ in range(200):
        g.replay()
    torch.cuda.synchronize()
    if a.ready:
        open(a.ready, "w").close()
    rng = random.Random(7)
    t, arrivals = 0.0, []
    while t < a.serve:
        t += rng.expovariate(a.rate)
        arrivals.append(t)
    service, latency = [], []
    t0 = clock()
    for at in arrivals:
        due = t0 + int(at * 1e9)
        while clock() < due:
            pass
        begin = clock()
        if a.marks:
            push("request")
        g.replay()
        torch.cuda.synchronize()
        if a.marks:
            pop()
        end = clock()
        service.append(end - begin)
        latency.append(end - due)
    row = own_row(a.carve)
    pair_ns = {}
    for name in ("request", "other"):
        t0 = clock()
        for _ in range(a.pairs):
            push(name)
            pop()
        pair_ns[name] = (clock() - t0) / max(a.pairs, 1)
    ms = lambda ns: ns / 1e6
    print(json.dumps({"arm": a.arm, "rate": a.rate, "marks": a.marks, "count": len(service),
                      "pair_ns_request": pair_ns["request"], "pair_ns_other": pair_ns["other"],
                      "service_p50_ms": ms(q(service, .5)), "service_p99_ms": ms(q(service, .99)),
                      "latency_p50_ms": ms(q(latency, .5)), "latency_p99_ms": ms(q(latency, .99)),
                      "marked": row.get("marked_requests"), "busy_periods": row.get("busy_periods"),
                      "requests": (row.get("tide") or {}).get("requests")}), flush=True)


if __name__ == "__main__":
    main()
