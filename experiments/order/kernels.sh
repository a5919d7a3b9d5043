#!/usr/bin/env bash
# Which kernels does an LS service's CUDA graph replay when it started
# before a running BE, and which when after? carve bench serve of LS beside
# BE under tide in both start orders, every process under the CUPTI kernel
# recorder (experiments/kernels/recorder.c): each process's kernels in
# OUT/k/PID.tsv, the files listed in order of creation in OUT/k/files.txt
# (serve starts the BE alone, the LS alone, then each order's pair), and
# each process's kernels summed up by kernels.py (OUT/k/summary-PID.tsv).
# Usage: [LS=efficientnet_b0:graph BE=vit_b_16 RATE=400 DURATION=6s
# TIDE=8:300us:0.05] kernels.sh OUT (bin/carve and bin/libcarve.so built).
set -u
OUT=$(realpath "${1:?usage: kernels.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" orderk
: "${LS:=efficientnet_b0:graph}" "${BE:=vit_b_16}" "${RATE:=400}" "${DURATION:=6s}" "${TIDE:=8:300us:0.05}"
device
"$C" version
step build the kernel recorder
"$ROOT/experiments/kernels/build.sh" "$W/libkrec.so" || exit 1
mkdir -p "$OUT/k"
step "bench serve $LS beside $BE at $RATE/s, both orders, recorded"
CUDA_INJECTION64_PATH=$W/libkrec.so CARVE_KERNELS_OUT=$OUT/k/%p.tsv TO=540 T "$C" bench serve --ls "$LS" --be "$BE" \
	--rates "$RATE" --mechanisms tide --tide "$TIDE" --idle=false --orders ls-first,be-first --duration "$DURATION" \
	--out "$OUT/serve" >"$OUT/serve.txt" 2>"$OUT/serve.log"
echo "exit $?"
cat "$OUT/serve.txt"
ls -tr --full-time "$OUT/k" | grep tsv >"$OUT/k/files.txt"
python3 "$E/kernels.py" "$OUT/k" | tee "$OUT/k/processes.txt"
step done
