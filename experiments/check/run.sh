#!/usr/bin/env bash
# After a change to the shim, placement or tide, on a GPU machine: every
# package's GPU tests (discover, workload, memmap, then dra's through
# experiments/dra/run.sh), PyTorch under each tenant class, and carve bench
# serve's reference point, the LS's p99 beside a BE over its p99 alone in
# the same run (experiments/tide/run.sh, serve step). Usage: run.sh OUT
# [serve flags] (bin/ built: carve, libcarve.so, discover.test,
# workload.test, memmap.test, dra.test).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT [serve flags]}")
shift
. "$(dirname "$(realpath "$0")")/../common.sh" check
: "${TO:=240}"

device
step GPU tests
for p in discover workload memmap; do
	(cd "$ROOT/internal/$p" && CARVE_GPU_TESTS=1 T "$ROOT/bin/$p.test" -test.v -test.run GPU) >"$OUT/gputest-$p.txt" 2>&1
	echo "$p: exit $?, $(grep -c '^--- PASS' "$OUT/gputest-$p.txt") passed, $(grep -c '^--- FAIL' "$OUT/gputest-$p.txt") failed"
done

step PyTorch under each tenant class, in carve\'s MPS
"$C" mps start
prog='import torch; x = torch.randn(4096, 4096, device="cuda"); y = (x @ x).sum().item(); print("sms", torch.cuda.get_device_properties(0).multi_processor_count, "ok", y == y)'
T "$C" run -n 16 -- python3 -c "$prog"; echo "plain partition: exit $?"
T "$C" run --ls -n 16 -- python3 -c "$prog"; echo "LS: exit $?"
T "$C" run --be -- python3 -c "$prog"; echo "BE: exit $?"
T "$C" run --be --be-floor 8 -- python3 -c "$prog"; echo "BE with a floor: exit $?"
T "$C" run -n 16 -- python3 "$E/children.py"; echo "children: exit $?"
"$C" ls
"$C" mps stop

"$ROOT/experiments/dra/run.sh" "$OUT/dra" | tail -5
STEPS=serve "$ROOT/experiments/tide/run.sh" "$OUT/tide" "$@" | tail -20
step done
