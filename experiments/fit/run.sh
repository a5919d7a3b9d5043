#!/usr/bin/env bash
# Issue "carve fits in", measured: profilers under carve run (torch.profiler's
# kernel table, ncu's metrics) with the partition still enforced; the SM count
# programs are told and what it changes (a batch-1 model from CUDA graphs in
# PyTorch, jitted ops in JAX) against MPS percentages; a fault in one MPS
# client beside another and beside a tenant run with --no-mps; what --no-mps
# costs in wall-clock throughput; the launch overhead of the interposing shim.
# Usage: run.sh OUT (bin/ built: carve, libcarve.so).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" fit

device
nvcc -O2 -arch=sm_90 -o "$W/fault" "$E/fault.cu" || exit 1

step profilers under carve run, without MPS
T python3 "$E/torchprof.py" "whole GPU, no carve" >"$OUT/torchprof-plain.txt" 2>&1
T "$C" run -n 8 -- python3 "$E/torchprof.py" "carve 8 TPCs" >"$OUT/torchprof-carve8.txt" 2>&1
T "$C" run -n 8 -- "$W/fault" smids >"$OUT/smids-carve8.txt" 2>&1
T "$C" run -n 8 -- ncu --metrics gpu__time_duration.sum,sm__cycles_active.avg "$W/fault" smids >"$OUT/ncu-carve8.txt" 2>&1
T ncu --metrics gpu__time_duration.sum,sm__cycles_active.avg "$W/fault" smids >"$OUT/ncu-plain.txt" 2>&1
grep -h '^{' "$OUT"/torchprof-*.txt "$OUT"/smids-*.txt "$OUT"/ncu-*.txt
grep -h "gpu__time_duration\|ERROR\|refus" "$OUT"/ncu-*.txt | head

"$C" mps start
MPSENV="CUDA_MPS_PIPE_DIRECTORY=$W/mps/pipe CUDA_MPS_LOG_DIRECTORY=$W/mps/log CUDA_DEVICE_MAX_CONNECTIONS=8"

step SM count seen and its effect, under MPS
for round in 1 2; do
	for n in 16 8; do
		pct=25; [ "$n" = 8 ] && pct=13
		T "$C" run -q -n "$n" -- python3 "$E/smcount.py" torch --tag "carve $n TPCs, partition's SMs" >>"$OUT/smcount.jsonl"
		T "$C" run -q -n "$n" --all-sms -- python3 "$E/smcount.py" torch --tag "carve $n TPCs, all SMs" >>"$OUT/smcount.jsonl"
		T env $MPSENV CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct python3 "$E/smcount.py" torch --tag "MPS $pct%" >>"$OUT/smcount.jsonl"
	done
done
T "$C" run -q -n 16 -- python3 "$E/smcount.py" jax --reps 500 --tag "carve 16 TPCs, partition's SMs" >>"$OUT/smcount.jsonl"
T "$C" run -q -n 16 --all-sms -- python3 "$E/smcount.py" jax --reps 500 --tag "carve 16 TPCs, all SMs" >>"$OUT/smcount.jsonl"
T env $MPSENV CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 python3 "$E/smcount.py" jax --reps 500 --tag "MPS 25%" >>"$OUT/smcount.jsonl"
T "$C" run -q -n 16 -- python3 "$E/smcount.py" cupy --tag "carve 16 TPCs" >>"$OUT/smcount.jsonl"
cat "$OUT/smcount.jsonl"

step torch.profiler under carve run, under MPS
T "$C" run -n 8 -- python3 "$E/torchprof.py" "carve 8 TPCs, MPS" >"$OUT/torchprof-carve8-mps.txt" 2>&1
grep -h '^{' "$OUT/torchprof-carve8-mps.txt"

step a fault in one MPS client, beside another and beside a --no-mps tenant
dmesg >"$W/dmesg-before" 2>/dev/null
T "$C" run -q -n 22 -- "$W/fault" loop 8 >"$OUT/fault-beside.json" 2>"$OUT/fault-beside.err" &
p1=$!
T "$C" run -q -n 22 --no-mps -- "$W/fault" loop 8 >"$OUT/fault-nomps.json" 2>"$OUT/fault-nomps.err" &
p2=$!
sleep 3
T "$C" run -q -n 22 -- "$W/fault" fault 500 >"$OUT/fault-culprit.json" 2>"$OUT/fault-culprit.err"
echo "culprit exit $?"
wait $p1; echo "beside exit $?"
wait $p2; echo "--no-mps exit $?"
"$C" ls >"$OUT/ls-after-fault.txt" 2>&1
"$C" ls -o json >"$OUT/ls-after-fault.json" 2>&1
dmesg 2>&1 | diff "$W/dmesg-before" - | tail -20 >"$OUT/dmesg-fault.txt"
mkdir -p "$OUT/mps-log" && cp "$W"/mps/log/* "$OUT/mps-log/" 2>/dev/null
cat "$OUT"/fault-*.json "$OUT/ls-after-fault.txt" "$OUT/dmesg-fault.txt"

step what --no-mps costs: 1 ms kernels per second, alone and beside a compute-heavy MPS client
loop() { T "$@" "$W/fault" loop 5; }
{
	echo "{\"setup\":\"MPS client, alone\",\"r\":$(loop "$C" run -q -n 33 --)}"
	echo "{\"setup\":\"--no-mps, alone\",\"r\":$(loop "$C" run -q -n 33 --no-mps --)}"
	"$C" run -q -n 33 -- "$C" bench __competitor --kind compute >"$W/comp.out" &
	comp=$!
	sleep 4
	echo "{\"setup\":\"MPS client, beside a compute-heavy MPS client\",\"r\":$(loop "$C" run -q -n 33 --)}"
	echo "{\"setup\":\"--no-mps, beside a compute-heavy MPS client\",\"r\":$(loop "$C" run -q -n 33 --no-mps --)}"
	echo "{\"setup\":\"competitor alive at the end\",\"r\":$(kill -0 $comp 2>/dev/null && echo true || echo false)}"
	kill $comp; wait $comp 2>/dev/null
} >"$OUT/nomps-cost.jsonl"
cat "$OUT/nomps-cost.jsonl"

step launch overhead with the interposing shim
"$C" mps stop
TO=400 T "$C" bench overhead --launches 1000 --rounds 5 --starts 10 --out "$OUT/overhead" >"$OUT/overhead.txt" 2>&1
cat "$OUT/overhead.txt"
step done
