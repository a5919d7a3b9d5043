#!/usr/bin/env python3
"""Summarize react.jsonl launch rounds: per setup, the median over rounds of
each round's p50 and mean host ns per launch, and each against "no shim".
Usage: react_summary.py DIR/react.jsonl"""
import collections
import json
import statistics
import sys

p50, mean = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    j = json.loads(line)
    if "setup" in j:
        p50[j["setup"]].append(j["r"]["p50"])
        mean[j["setup"]].append(j["r"].get("mean", j["r"]["p50"]))
b50, bmean = statistics.median(p50["no shim"]), statistics.median(mean["no shim"])
print(f"{'setup':34s} {'rounds':>6s} {'p50 ns':>8s} {'vs none':>8s} {'mean ns':>8s} {'vs none':>8s}")
for k in p50:
    m50, mm = statistics.median(p50[k]), statistics.median(mean[k])
    print(f"{k:34s} {len(p50[k]):6d} {m50:8.0f} {100 * (m50 / b50 - 1):+7.1f}% {mm:8.0f} {100 * (mm / bmean - 1):+7.1f}%")
