#!/usr/bin/env bash
# Final check of a build on a GPU machine: discovery, the opt-in GPU tests
# (bin/discover.test, from 'go test -c -o bin/discover.test ./internal/discover'), and the
# host launch cost without and with the shim, 30 alternations pinned to one CPU.
#   make build && experiments/partitioning/check.sh OUTDIR
source "$(dirname "$(realpath "$0")")/lib.sh"
s=$(date +%s%N); T "$CARVE" topo --refresh; rc=$?; e=$(date +%s%N)
note topo_discover "\"rc\":$rc,\"wall_ms\":$(( (e - s) / 1000000 ))"
[ $rc = 0 ] || exit 1
(cd "$ROOT/internal/discover" && CARVE_GPU_TESTS=1 T "$ROOT/bin/discover.test" -test.v -test.run GPU 2>&1) | tee "$W/gputest"
note gpu_tests "\"passed\":$(grep -c -- '--- PASS' "$W/gputest"),\"failed\":$(grep -c -- '--- FAIL' "$W/gputest"),\"skipped\":$(grep -c -- '--- SKIP' "$W/gputest")"
echo "== launch cost"
launch_cost 30
echo "== a partitioned PyTorch process under MPS, seen by carve ls"
"$CARVE" mps start && "$CARVE" mps status
T "$CARVE" run -n 50% -- python3 "$E/matmul.py" --seconds 4 --label check & p=$!
sleep 8; "$CARVE" ls; "$CARVE" ls -o json; wait $p
"$CARVE" mps stop
echo "== done"
