#!/usr/bin/env bash
# Whether CUDA graphs follow carve set under carve's shim (shim/graph.c):
# follow.cu, run under carve run -t 0-7, moves itself to 40-47 and then
# 20-27 and checks each replay's SM-id probe and output, and prints the
# cost of the first replay after a move against a plain one. Every line it
# checks says PASS or FAIL; the last line is the verdict. Usage: follow.sh
# OUT (bin/ built: carve, libcarve.so; nvcc on PATH); the output in
# OUT/follow.txt and OUT/log.txt.
set -u
OUT=$(realpath "${1:?usage: follow.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" follow
device
step build
nvcc -O2 -arch=sm_90 -I"$E/.." -o "$W/follow" "$E/follow.cu" -lcuda || { echo "FAIL build"; exit 1; }
step graphs after carve set
TO=${TO:-120} T "$C" run --no-mps -t 0-7 -- "$W/follow" "$C" 40-47 20-27 >"$OUT/follow.txt" 2>&1
rc=$?
cat "$OUT/follow.txt"
if [ $rc -eq 124 ]; then
	echo "FAIL timed out"
	exit 1
fi
if [ $rc -ne 0 ] || grep -q '^FAIL' "$OUT/follow.txt" || ! grep -q '^PASS graphs follow carve set' "$OUT/follow.txt"; then
	echo "FAIL follow (exit $rc)"
	exit 1
fi
echo "PASS follow"
