#!/usr/bin/env python3
"""wait.py OUT: tide.sh's wait part as a table: each setting's probe latency
(p50, p90, p99, p99.9, max, in microseconds) and its BE's throughput over
the same seconds, from OUT/wait-LABEL.ls and .be; and OUT/wait.svg, the
latencies' distributions (CDF, log scale)."""
import glob
import json
import math
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

# the distributions as a plot: each setting's latency CDF, log scale
W, H, L, B = 720, 420, 60, 50
lo, hi = 10.0, 10000.0


def x(us):
    return L + (W - L - 20) * (math.log10(min(max(us, lo), hi)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))


def y(f):
    return H - B - (H - B - 20) * f


colours = ["#000000", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>']
for us in (10, 100, 1000, 10000):
    svg.append(f'<line x1="{x(us):.1f}" y1="20" x2="{x(us):.1f}" y2="{H - B}" stroke="#ddd"/>'
               f'<text x="{x(us):.1f}" y="{H - B + 16}" text-anchor="middle">{us}</text>')
for f in (0, 0.5, 0.9, 0.99, 1):
    svg.append(f'<line x1="{L}" y1="{y(f):.1f}" x2="{W - 20}" y2="{y(f):.1f}" stroke="#eee"/>'
               f'<text x="{L - 6}" y="{y(f) + 4:.1f}" text-anchor="end">{f}</text>')
svg.append(f'<text x="{(W + L) / 2}" y="{H - 12}" text-anchor="middle">probe request latency, us (log)</text>')
for k, r in enumerate(rows):
    lat = sorted(r["latencies_us"] or [])
    if not lat:
        continue
    pts = " ".join(f"{x(v):.1f},{y((i + 1) / len(lat)):.1f}" for i, v in enumerate(lat))
    c = colours[k % len(colours)]
    svg.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{pts}"/>')
    svg.append(f'<text x="{L + 10}" y="{30 + 16 * k}" fill="{c}">{r["setting"]}</text>')
svg.append("</svg>")
open(os.path.join(out, "wait.svg"), "w").write("\n".join(svg))
print(f"plot: {os.path.join(out, 'wait.svg')}")
