#!/usr/bin/env python3
"""wait.py OUT: tide.sh's wait part as a table: each setting's probe latency
(p50, p90, p99, p99.9, max, in microseconds) and its BE's throughput over
the same seconds, from OUT/wait-LABEL.ls and .be; also OUT/wait.json."""
import glob
import json
import os
import sys

out = sys.argv[1]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


rows = []
for ls in sorted(glob.glob(os.path.join(out, "wait-*.ls")), key=os.path.getmtime):
    label = os.path.basename(ls)[len("wait-"):-len(".ls")]
    lat = None
    for line in open(ls):
        if line.startswith("{"):
            lat = json.loads(line)["latencies_us"]
    be = None
    try:
        for line in open(ls[:-3] + ".be"):
            if line.startswith("{"):
                r = json.loads(line)
                be = {"per_s": r["items"] / r["seconds"], "unit": r["unit"]}
    except FileNotFoundError:
        pass
    rows.append({"setting": label, "latencies_us": lat, "be": be})

print(f"{'SETTING':32} {'REQS':>6} {'P50':>8} {'P90':>8} {'P99':>8} {'P99.9':>8} {'MAX':>8}  BE/S")
for r in rows:
    lat = r["latencies_us"] or []
    qs = [pct(lat, p) for p in (50, 90, 99, 99.9)] + [max(lat) if lat else float("nan")]
    be = f"{r['be']['per_s']:.0f} {r['be']['unit']}" if r["be"] else "-"
    print(f"{r['setting']:32} {len(lat):6d} " + " ".join(f"{q:8.0f}" for q in qs) + f"  {be}")
print("probe latency in us, launch to synchronize's return, one tiny kernel a request (Poisson)")
json.dump(rows, open(os.path.join(out, "wait.json"), "w"))
