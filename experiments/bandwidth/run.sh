#!/usr/bin/env bash
# The bandwidth study (and whether CUDA graphs can follow a new mask): a
# streaming kernel's bandwidth against its TPC count; kernels from memory-
# to compute-bound, and PyTorch's, timed on several TPC counts (the scaling
# estimator) and measured by Nsight Compute (their DRAM bytes, the truth
# and the cost of measuring it); a memory-bound victim on half the GPU
# beside a streaming interferer on a growing part of the other half, then
# beside one held to a share of each epoch; and experiments/graphs/remask.
# Usage: run.sh OUT [PART...] (bin/ built: carve, libcarve.so); PARTs:
# graphs stream kernels torch victim (default: all). JSON lines in OUT.
set -u
OUT=$(realpath "${1:?usage: run.sh OUT [PART...]}")
shift
PARTS=" ${*:-graphs stream kernels torch victim} "
want() { [[ $PARTS == *" $1 "* ]]; }
. "$(dirname "$(realpath "$0")")/../common.sh" bw
device
nvcc -O2 -arch=sm_90 -o "$W/bw" "$E/bw.cu" || exit 1
nvcc -O2 -arch=sm_90 -I"$E/.." -o "$W/remask" "$E/../graphs/remask.cu" -lcuda || exit 1
B=$W/bw

want graphs && {
step graphs: replays after carve set
T "$C" run --no-mps -t 0-7 -- "$W/remask" "$C" 40-47 20-27 56-63 >"$OUT/remask.txt" 2>&1
cat "$OUT/remask.txt"
}

want stream && {
step stream bandwidth against TPCs
for k in 1 2 4 6 8 12 16 20 24 28 33 40 48 56 66; do
	echo "{\"tpcs\":$k,\"r\":$(TO=20 T "$C" run --no-mps -n $k -- "$B" stream 1)}"
done | tee "$OUT/stream.jsonl"
}

want kernels && {
step kernels against TPCs
for k in 8 16 33 66; do
	echo "{\"tpcs\":$k,\"r\":$(TO=30 T "$C" run --no-mps -n $k -- "$B" kernels)}"
done | tee "$OUT/kernels.jsonl"
step the same kernels under Nsight Compute, whole GPU
s0=$(date +%s.%N)
TO=120 T ncu --csv --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum "$B" kernels >"$OUT/kernels-ncu.csv" 2>&1
echo "ncu of the kernels run: $(python3 -c "import sys; print(round($(date +%s.%N) - $s0, 1))") s"
s0=$(date +%s.%N)
TO=60 T "$B" kernels >/dev/null
echo "the kernels run alone: $(python3 -c "import sys; print(round($(date +%s.%N) - $s0, 1))") s"
}

want torch && {
step PyTorch kernels against TPCs
for m in resnet vit; do
	for k in 16 33 66; do
		TO=120 T "$C" run --no-mps -n $k -- python3 "$E/torchk.py" $m "n$k" 10 2>>"$OUT/torchk.err" | tail -1
	done
done >"$OUT/torchk.jsonl"
wc -c "$OUT/torchk.jsonl"
step PyTorch kernels under Nsight Compute
for m in resnet vit; do
	s0=$(date +%s.%N)
	TO=200 T ncu --csv --launch-skip 600 --launch-count 150 --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
		python3 "$E/torchk.py" $m ncu 20 >"$OUT/torchk-ncu-$m.csv" 2>&1
	echo "ncu of $m, 150 kernels: $(python3 -c "import sys; print(round($(date +%s.%N) - $s0, 1))") s"
done
}

want victim && {
"$C" mps start
step victim on TPCs 0-32, interferer on k TPCs of 33-65
V() { TO=60 T "$C" run -t 0-32 -- "$B" victim 1500; }
for k in 0 2 4 8 16 24 33; do
	if [ $k -gt 0 ]; then
		timeout 30 "$C" run -t 33-$((32 + k)) -- "$B" stream 12 >"$W/int.json" &
		ip=$! # timeout's pid: its TERM reaches the interferer
		sleep 3
	fi
	echo "{\"interferer_tpcs\":$k,\"r\":$(V)}"
	if [ $k -gt 0 ]; then
		kill $ip 2>/dev/null
		wait $ip 2>/dev/null
	fi
done | tee "$OUT/victim-tpcs.jsonl"
step victim beside an interferer on 33 TPCs held to a share of each 1 ms epoch
for share in 0.1 0.25 0.5 0.75 1; do
	timeout 30 "$C" run -t 33-65 -- "$B" duty $share 1000 5 >"$W/duty.json" &
	ip=$!
	sleep 3
	nvidia-smi --query-gpu=utilization.memory --format=csv,noheader -lms 200 >"$W/util.txt" &
	up=$!
	echo "{\"share\":$share,\"r\":$(V),\"nvml_mem_util\":\"$(tr -d ' %' <"$W/util.txt" | tr '\n' ' ')\"}"
	kill $up 2>/dev/null
	wait $up 2>/dev/null
	wait $ip 2>/dev/null # it ends by itself, printing what it moved
	echo "  interferer: $(cat "$W/duty.json")"
done | tee "$OUT/victim-share.jsonl"
"$C" mps stop
}
step done
