#!/usr/bin/env bash
# Nsight Compute beside carve's shim: ncu alone, ncu under carve run (outside
# MPS, then as an MPS client with --mps client), the launch-tools table's
# calls traced, and torch.profiler's kernel table under carve run again.
# Usage: ncu.sh OUT (bin/ built: carve, libcarve.so).
set -u
OUT=$(realpath "${1:?usage: ncu.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" ncu
: "${TO:=120}"
M="--metrics gpu__time_duration.sum,sm__cycles_active.avg"

device
ncu --version | tail -1
nvcc -O2 -arch=sm_90 -o "$W/fault" "$E/fault.cu" || exit 1

step ncu alone
T ncu $M "$W/fault" smids >"$OUT/ncu-alone.txt" 2>&1
grep -h "distinct\|==PROF==\|==WARNING==\|==ERROR==" "$OUT/ncu-alone.txt" | head -6
step ncu under carve run -n 8 --no-mps
T "$C" run -n 8 --no-mps -- ncu $M "$W/fault" smids >"$OUT/ncu-carve8.txt" 2>&1
grep -h "distinct\|==PROF==\|==WARNING==\|==ERROR==\|sm__cycles\|gpu__time" "$OUT/ncu-carve8.txt" | head -12
step the same, the tools table traced
CARVE_TRACE_TOOLS=1 T "$C" run -n 8 --no-mps -- ncu $M "$W/fault" smids >"$OUT/ncu-carve8-traced.txt" 2>&1
grep -h "tools\[\|tools table\|distinct\|==WARNING==" "$OUT/ncu-carve8-traced.txt" | sort | uniq -c | sort -rn | head -30

"$C" mps start
step ncu --mps client under carve run -n 8, carve MPS running
T "$C" run -n 8 -- ncu --mps client "$W/fault" smids >"$OUT/ncu-carve8-mps.txt" 2>&1
grep -h "distinct\|==PROF==\|==WARNING==\|==ERROR==\|gpu__time" "$OUT/ncu-carve8-mps.txt" | head -12
step torch.profiler under carve run -n 8
T "$C" run -n 8 -- python3 "$E/torchprof.py" "carve 8 TPCs" >"$OUT/torchprof-carve8.txt" 2>&1
grep -h '^{' "$OUT/torchprof-carve8.txt"
"$C" mps stop
step done
