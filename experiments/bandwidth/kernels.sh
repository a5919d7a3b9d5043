#!/usr/bin/env bash
# Issue 33, part 2: the kernel table and tide. (a) carve profile --table
# measures the first launch of each kernel function of the BE densenet161
# (batch 64, fp16 inference, as carve bench serve runs it: its own
# serve_be.py) under Nsight Compute into OUT/densenet161.json, and prints
# how many kernels it has, how many are compute-bound and the heaviest by
# bytes; (b) carve bench serve, resnet50 graphs at 450/s beside
# densenet161, carve tide with --slo 2x, once without the table and once
# with it (kernels=, the same run), so that the BE's throughput and the
# LS's p99 and attainment compare. Within 8 minutes.
# Usage: kernels.sh OUT (bin/ built: carve, libcarve.so; ncu, PyTorch and
# torchvision). OUT/table.txt, OUT/serve.txt (the table), serve.log, serve.json.
set -u
OUT=$(realpath "${1:?usage: kernels.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" kernels
device
"$C" version

step "kernel table: densenet161 batch 64 under ncu"
s0=$(date +%s)
echo go | TO=${TABLE_TO:-200} T "$C" profile --table "$OUT/densenet161.json" -- \
	python3 "$ROOT/internal/workload/serve_be.py" --model densenet161 --batch 64 --duration 1 \
	>"$OUT/table.log" 2>&1
echo "exit $? after $(($(date +%s) - s0)) s"
grep -E "^wrote|rror" "$OUT/table.log" | tail -5
[ -s "$OUT/densenet161.json" ] || { echo "no kernel table: see table.log"; exit 1; }
TO=20 T python3 - "$OUT/densenet161.json" <<'EOF' | tee "$OUT/table.txt"
import json, sys
t = json.load(open(sys.argv[1]))
k = t["kernels"]
cb = [n for n, v in k.items() if v["pct"] < 30]
print(f'{t["gpu"]}: {len(k)} kernels, {len(cb)} compute-bound (under 30% of the DRAM peak)')
by = sorted(k.items(), key=lambda x: -x[1]["bytes"])
tot = sum(v["bytes"] for v in k.values())
tns = sum(v["ns"] for v in k.values())
print(f'first launches: {tot / 1e9:.3f} GB in {tns / 1e6:.3f} ms; compute-bound ones '
      f'{sum(k[n]["bytes"] for n in cb) / 1e9:.3f} GB in {sum(k[n]["ns"] for n in cb) / 1e6:.3f} ms')
for n, v in by[:12]:
    print(f'{v["bytes"] / 1e6:10.1f} MB {v["ns"] / 1e3:9.1f} us {v["pct"]:5.1f}%  {n[:90]}')
EOF

step "carve bench serve: resnet50 graphs at 450/s beside densenet161, tide with and without the table"
TO=${SERVE_TO:-270} T "$C" bench serve --out "$OUT" --ls resnet50:graph --be densenet161 --rates 450 \
	--mechanisms tide --tide "8:300us:1:slo=2x,8:300us:1:slo=2x:kernels=$OUT/densenet161.json" \
	--orders ls-first --idle=false >"$OUT/serve.txt" 2>"$OUT/serve.log"
echo "exit $?"
cat "$OUT/serve.txt"
step done
