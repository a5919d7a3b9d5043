#!/usr/bin/env bash
# tide.sh OUT: part 3 of issue 22 on a GPU: shim/slice.c, a BE's long
# kernels cut into pieces under carve run --be --slice while an LS tenant is
# active. Three checks, each logged with its verdict to OUT/summary.txt:
#   bits     step.py (resnet50 + transformer, AdamW, 3 steps) as a BE beside
#            an LS tenant kept active (a small kernel every 2 ms): plain,
#            --be, --be --slice 200us and --be --slice 20us (the shortest
#            allowed: cuts the most); each must give plain's hashes, and
#            CARVE_DEBUG's last line says how many launches were cut
#   serve    carve bench serve, tide only, with and without slice=200us
#            (share 0: the BE held while LS work is in flight): the LS's p99
#            and the BE's throughput, beside a served LS and an idle one
#            (the idle BE throughput should be within 3% of unsliced)
# Usage: make build && experiments/slicing/tide.sh OUT (python3 with torch, torchvision
# and transformers; about 10 minutes). BE_JOBS: the serve BE jobs
# (default resnet50-train,densenet161).
set -u
if [ $# -ne 1 ]; then
	echo "usage: tide.sh OUT" >&2
	exit 2
fi
OUT=$(realpath -m "$1")
. "$(dirname "$(realpath "$0")")/../common.sh" slicetide
PY=${PY:-python3}
S=$OUT/summary.txt
: >"$S"
[ -x "$C" ] && [ -e "$(dirname "$C")/libcarve.so" ] || { echo "$C or libcarve.so beside it missing: run make build first"; exit 1; }
device

step "an LS tenant kept active"
TO=900 T "$C" run --ls -n 16 -- "$PY" -c '
import time, torch
x = torch.ones(1 << 16, device="cuda")
while True:
    x.add_(1); torch.cuda.synchronize(); time.sleep(0.002)
' >"$OUT/ls.txt" 2>&1 &
LS=$!
sleep 15 # its first request served

# bits LABEL ARGS...: step.py under ARGS (none: no carve); its hashes line
bits() {
	local label=$1
	shift
	step "bits $label: $*"
	CARVE_DEBUG=1 T "$@" "$PY" "$E/step.py" --steps 3 >"$OUT/bits-$label.out" 2>"$OUT/bits-$label.err"
	echo "$label rc=$? $(grep -h 'slice:' "$OUT/bits-$label.err" | tail -1)" | tee -a "$S"
}
bits plain
bits be "$C" run --be --
bits slice200 "$C" run --be --slice 200us --
bits slice20 "$C" run --be --slice 20us --
"$PY" - "$OUT" <<'PYEOF' | tee -a "$S"
import json, sys
def h(label):
    for line in open(f"{sys.argv[1]}/bits-{label}.out"):
        if line.startswith('{"steps"'):
            r = json.loads(line)
            return tuple(r[k] for k in ("loss_sha256", "grads_sha256", "params_sha256"))
for label in ("be", "slice200", "slice20"):
    a, b = h("plain"), h(label)
    print(f"bits {label}: {'identical to plain' if a and a == b else 'DIFFERENT from plain (or missing)'}")
PYEOF
kill "$LS" 2>/dev/null
wait "$LS" 2>/dev/null

step "serve: tide with and without slicing"
TO=1200 T "$C" bench serve --mechanisms tide --tide 8:300us:0,8:300us:0:slice=200us \
	--be "${BE_JOBS:-resnet50-train,densenet161}" --idle --out "$OUT/serve" >"$OUT/serve.txt" 2>&1
echo "serve rc=$? (tables: OUT/serve.txt; compare the LS p99 and the BE throughput of the two settings)" | tee -a "$S"
cat "$S"
