#!/usr/bin/env bash
# Reproduces the partitioning evidence on a GPU machine with nvcc and PyTorch:
#   make build && experiments/partitioning/run.sh OUTDIR
# (bin/carve may be cross-built elsewhere: CGO_ENABLED=0 GOOS=linux GOARCH=amd64.)
# Writes OUTDIR/results.jsonl (one JSON object per measurement), topo.json,
# trace.json (per-iteration times around 'carve set') and log.txt.
set -u
source "$(dirname "$(realpath "$0")")/lib.sh"
(cd "$ROOT/internal/kernels" && ./gen.sh && cp topo.ptx "$OUT/topo.ptx")

echo "== topo"
s=$(date +%s%N); T "$CARVE" topo --refresh -o json >"$OUT/topo.json"; rc=$?; e=$(date +%s%N)
note topo_discover "\"rc\":$rc,\"wall_ms\":$(( (e - s) / 1000000 ))"
s=$(date +%s%N); T "$CARVE" topo; e=$(date +%s%N)
note topo_cached "\"wall_ms\":$(( (e - s) / 1000000 ))"
[ $rc = 0 ] || exit 1
for i in 1 2 3; do # the grouping must not change between discoveries
	T "$CARVE" topo --refresh -o json | grep -v -e discovery_ms -e discovered_at >"$W/topo$i.json"
done
grep -v -e discovery_ms -e discovered_at "$OUT/topo.json" >"$W/topo0.json"
same=true; for i in 1 2 3; do cmp -s "$W/topo0.json" "$W/topo$i.json" || same=false; done
note topo_repeat "\"identical_over_4_discoveries\":$same"

echo "== GPC grouping with other cluster sizes"
for c in 2 4 8; do
	g=$(T "$CARVE" __discover --cluster-size $c | python3 -c 'import json,sys; t=json.load(sys.stdin); print(json.dumps([len(g["tpcs"]) for g in t["gpcs"]]))')
	note gpc_cluster_size "\"cluster\":$c,\"tpcs_per_group\":$g"
done
echo "== opt-in GPU tests"
[ -x "$ROOT/bin/discover.test" ] && (cd "$ROOT/internal/discover" && CARVE_GPU_TESTS=1 T "$ROOT/bin/discover.test" -test.v -test.run GPU 2>&1 | tail -15)

echo "== launch cost (no MPS): host ns per empty launch, alternating"
# pinned to one CPU; ten alternations so that drift shows as spread, not as a difference
for i in $(seq 10); do
	T taskset -c 3 "$W/launchcost" none | tee -a "$R"
	T taskset -c 3 "$CARVE" run -q -t all -- "$W/launchcost" shim_all | tee -a "$R"
	T taskset -c 3 "$CARVE" run -q -t 0-32 -- "$W/launchcost" shim_half | tee -a "$R"
done

echo "== resnet-50 outputs with and without carve"
T python3 "$E/resnet.py" "$W/ref.pt"
T "$CARVE" run -n 20 -- python3 "$E/resnet.py" "$W/carve.pt"
T python3 "$E/compare.py" "$W/ref.pt" "$W/carve.pt" | sed 's/^{/{"step":"resnet50_compare",/' | tee -a "$R"

echo "== MPS"
"$CARVE" mps start || exit 1
"$CARVE" mps status
ls -la "$W/mps/pipe"
A="$W/fma --seconds 6"
Bm="python3 $E/matmul.py --seconds 6"
# Each program waits for a common wall-clock start (--start-at) after its own
# initialization, so that co-runners time the same window.
at() { echo $(( $(date +%s) + 12 )); }
for rep in 1 2; do
	echo "-- alone, rep $rep"
	T "$CARVE" run -q -t 0-32 -- $A --label A_alone_0-32 --start-at "$(at)" | tee -a "$R"
	T "$CARVE" run -q -t 33-65 -- $Bm --label B_alone_33-65 --start-at "$(at)" | tee -a "$R"
	T "$CARVE" run -q -t 0-32 -- $Bm --label B_alone_0-32 --start-at "$(at)" | tee -a "$R"
	echo "-- together, disjoint"
	s=$(at)
	T "$CARVE" run -q -t 0-32 -- $A --label A_with_B_disjoint --start-at "$s" | tee -a "$R" & p1=$!
	T "$CARVE" run -q -t 33-65 -- $Bm --label B_with_A_disjoint --start-at "$s" | tee -a "$R" & p2=$!
	sleep 14; "$CARVE" ls; wait $p1 $p2
	echo "-- together, same TPCs 0-32"
	s=$(at)
	T "$CARVE" run -q -t 0-32 -- $A --label A_with_B_same_0-32 --start-at "$s" | tee -a "$R" & p1=$!
	T "$CARVE" run -t 0-32 -- $Bm --label B_with_A_same_0-32 --start-at "$s" | tee -a "$R" & p2=$!
	wait $p1 $p2
done

echo "== carve set on a running PyTorch process"
T "$CARVE" run -q -t all -- python3 "$E/matmul.py" --seconds 14 --label resize --trace "$OUT/trace.json" | tee -a "$R" & p1=$!
sleep 1; pid=$(pgrep -f '^python3 .*matmul.py --seconds 14' | head -1)
sleep 6
for spec in 0-32 0-15; do
	t0=$(date +%s.%N)
	"$CARVE" set -p "$pid" -t "$spec"
	note set "\"t_before\":$t0,\"t_after\":$(date +%s.%N),\"pid\":$pid,\"tpcs\":\"$spec\""
	"$CARVE" ls
	sleep 4
done
"$CARVE" ls -o json
wait $p1
"$CARVE" mps stop
echo "== done"
