#!/usr/bin/env bash
# Then the launch cost with and without the shim.
# Why do compute-bound programs in disjoint partitions still slow each other?
# Runs each program alone and beside another in the other half of the TPCs,
# under carve and MPS, with the SM clock and power sampled every 100 ms.
#   make build && experiments/partitioning/clocks.sh OUTDIR
source "$(dirname "$(realpath "$0")")/lib.sh"
"$CARVE" topo >/dev/null || exit 1
"$CARVE" mps start || exit 1
at() { echo $(( $(date +%s) + ${1:-12} )); }
# run LABEL SPEC PROGRAM... : one partitioned program, timed from the common start $S
run() { local l=$1 t=$2; shift 2; T "$CARVE" run -q -t "$t" -- "$@" --seconds 6 --label "$l" --start-at "$S" | tee -a "$R"; }
# sampled NAME CMD...: runs CMD while sampling clocks; notes the samples of the timed window
sampled() {
	local name=$1; shift
	nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 >"$W/clk" & local sp=$!
	"$@"
	kill $sp; wait $sp 2>/dev/null
	python3 - "$W/clk" "$S" "$name" >>"$R" <<'PY'
import sys, json, statistics, datetime
path, start, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
clk, pw = [], []
for line in open(path):
    ts, c, p = [x.strip() for x in line.split(",")]
    t = datetime.datetime.strptime(ts, "%Y/%m/%d %H:%M:%S.%f").timestamp()
    if start + 1 <= t <= start + 5:
        clk.append(float(c)); pw.append(float(p))
print(json.dumps({"step": "clocks", "window": name, "samples": len(clk),
                  "sm_mhz_median": statistics.median(clk) if clk else None,
                  "power_w_median": statistics.median(pw) if pw else None}))
PY
}
FMA="$W/fma"
MM="python3 $E/matmul.py"
for rep in 1 2; do
	S=$(at 6);  sampled "A_alone" run A_alone 0-32 $FMA
	S=$(at 6);  sampled "A2_alone" run A2_alone 33-65 $FMA
	S=$(at);    sampled "B16_alone" run B16_alone 33-65 $MM --dtype bfloat16
	S=$(at);    sampled "B32_alone" run B32_alone 33-65 $MM --dtype float32 --n 4096
	S=$(at 6);  sampled "A_with_A2" eval 'run A_with_A2 0-32 $FMA & p1=$!; run A2_with_A 33-65 $FMA; wait $p1'
	S=$(at);    sampled "A_with_B16" eval 'run A_with_B16 0-32 $FMA & p1=$!; run B16_with_A 33-65 $MM --dtype bfloat16; wait $p1'
	S=$(at);    sampled "A_with_B32" eval 'run A_with_B32 0-32 $FMA & p1=$!; run B32_with_A 33-65 $MM --dtype float32 --n 4096; wait $p1'
done
"$CARVE" mps stop

echo "== launch cost: host ns per empty launch, pinned to one CPU, alternating"
launch_cost 20
echo "== done"
