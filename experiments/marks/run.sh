#!/usr/bin/env bash
# Marked requests on the GPU (marks.py): an efficientnet_b0 graph LS under
# carve run --ls -n 16 on carve's MPS, serving Poisson requests at RATE/s
# for SERVE s, in the ARMS of each of ROUNDS rounds, each
# "name:marks.py's --marks:carve run's flags", by default "bare" (no NVTX
# call), "nomark" (each request an NVTX range, no --mark: NVTX's no-op) and
# "mark" (--mark=request: the shim times each); then, with BE=1, "mark-be",
# the marked LS beside a vit_b_16 BE (carve run --be, started first).
# Usage: [RATE=540 SERVE=8 ROUNDS=2 ARMS=... BE=1] experiments/marks/run.sh
# OUT (bin/carve and bin/libcarve.so built). OUT/marks.jsonl: a line a run.
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" marks
: "${RATE:=540}" "${SERVE:=8}" "${ROUNDS:=2}" "${ARMS:=bare:0:;nomark:1:;mark:1:--mark=request}" "${BE:=1}"
device
"$C" version
step start carve\'s MPS
T "$C" mps start || exit 1
ls_run() { # ARM MARKS [carve run flags]
	local arm=$1 marks=$2
	shift 2
	step "$arm"
	T "$C" run --ls -n 16 "$@" -- python3 "$E/marks.py" --carve "$C" --rate "$RATE" --serve "$SERVE" --marks "$marks" --arm "$arm" >>"$OUT/marks.jsonl"
	echo "exit $?"
	tail -n 1 "$OUT/marks.jsonl"
}
IFS=';' read -ra arms <<<"$ARMS"
for r in $(seq "$ROUNDS"); do
	for arm in "${arms[@]}"; do
		IFS=: read -r name marks flags <<<"$arm"
		ls_run "$name" "$marks" $flags
	done
done
[ "$BE" = 1 ] || { step done; exit 0; }
step BE first
BE='
import os, torch, torchvision
m = torchvision.models.vit_b_16(weights=None).eval().cuda().half()
x = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.half)
with torch.no_grad():
    for _ in range(5):
        m(x)
    torch.cuda.synchronize()
    open(os.environ["READY"], "w").close()
    while True:
        m(x)
        torch.cuda.synchronize()
'
READY=$W/be-ready T "$C" run --be --be-share 0.05 -- python3 -c "$BE" >"$OUT/be.txt" 2>&1 &
be=$!
for _ in $(seq 120); do [ -e "$W/be-ready" ] && break; sleep 1; done
ls_run mark-be 1 --mark=request
kill "$be"
wait "$be"
step done
