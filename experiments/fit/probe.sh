#!/usr/bin/env bash
# What fitting carve in needs to know of a GPU machine: the GPU tests after a
# change; how CUPTI (torch.profiler) and ncu use the driver's launch-tools
# table, with carve's shim tracing their calls; what SM count PyTorch, JAX and
# CuPy see under carve and under MPS percentages, and what it changes for a
# batch-1 model from CUDA graphs; what a fault in one MPS client does to a
# client beside it and to a tenant outside MPS, and what being outside MPS
# costs. Usage: probe.sh OUT (bin/ built: carve, libcarve.so, *.test).
set -u
OUT=$(realpath "${1:?usage: probe.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" fit

device
nvcc -O2 -arch=sm_90 -o "$W/fault" "$E/fault.cu" || exit 1

step sanity: PyTorch under carve run
T "$C" run -n 16 -- python3 -c "import torch; print('sms', torch.cuda.get_device_properties(0).multi_processor_count, 'sum', (torch.ones(4, device='cuda') * 2).sum().item())"

step GPU tests
for p in discover workload memmap; do
	(cd "$ROOT/internal/$p" && CARVE_GPU_TESTS=1 TO=240 T "$ROOT/bin/$p.test" -test.v -test.run GPU) >"$OUT/gputest-$p.txt" 2>&1
	echo "$p: $(grep -c '^--- PASS' "$OUT/gputest-$p.txt") passed, $(grep -c '^--- FAIL' "$OUT/gputest-$p.txt") failed"
done

step CUPTI and ncu with the tools table traced
cupti=$(python3 -c "import os, nvidia.cuda_cupti as c; print(os.path.dirname(c.__file__))" 2>/dev/null)
find / -name 'libcupti.so*' 2>/dev/null | head -5 | while read -r f; do echo "$f"; ldd "$f" | grep -i cuda; done >"$OUT/cupti-ldd.txt"
LD_PRELOAD=$ROOT/bin/libcarve.so CARVE_TRACE_TOOLS=1 T python3 "$E/torchprof.py" traced >"$OUT/cupti-traced.txt" 2>&1
T "$C" run -n 16 -- env CARVE_TRACE_TOOLS=1 python3 "$E/torchprof.py" carve16 >"$OUT/cupti-carve.txt" 2>&1
T python3 "$E/torchprof.py" plain >"$OUT/cupti-plain.txt" 2>&1
LD_PRELOAD=$ROOT/bin/libcarve.so CARVE_TRACE_TOOLS=1 T ncu --metrics gpu__time_duration.sum "$W/fault" smids >"$OUT/ncu-traced.txt" 2>&1
T "$C" run -n 8 -- ncu --metrics gpu__time_duration.sum "$W/fault" smids >"$OUT/ncu-carve.txt" 2>&1
T "$C" run -n 8 -- "$W/fault" smids >"$OUT/smids-carve8.txt" 2>&1

step MPS
"$C" mps start
MPSENV="CUDA_MPS_PIPE_DIRECTORY=$W/mps/pipe CUDA_MPS_LOG_DIRECTORY=$W/mps/log CUDA_DEVICE_MAX_CONNECTIONS=8"

step SM count seen and its effect
for n in 16 8; do
	pct=$((100 * n / 64)); [ "$n" = 16 ] && pct=25; [ "$n" = 8 ] && pct=13
	T "$C" run -q -n "$n" -- python3 "$E/smcount.py" torch --tag "carve $n TPCs, partition's SMs" >>"$OUT/smcount.jsonl"
	T "$C" run -q -n "$n" --all-sms -- python3 "$E/smcount.py" torch --tag "carve $n TPCs, all SMs" >>"$OUT/smcount.jsonl"
	T env $MPSENV CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct python3 "$E/smcount.py" torch --tag "MPS $pct%" >>"$OUT/smcount.jsonl"
done
T "$C" run -q -n 16 -- python3 "$E/smcount.py" jax --tag "carve 16 TPCs, partition's SMs" >>"$OUT/smcount.jsonl" 2>"$OUT/jax-err.txt"
T "$C" run -q -n 16 --all-sms -- python3 "$E/smcount.py" jax --tag "carve 16 TPCs, all SMs" >>"$OUT/smcount.jsonl" 2>>"$OUT/jax-err.txt"
T env $MPSENV CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25 python3 "$E/smcount.py" jax --tag "MPS 25%" >>"$OUT/smcount.jsonl" 2>>"$OUT/jax-err.txt"
T "$C" run -q -n 16 -- python3 "$E/smcount.py" cupy --tag "carve 16 TPCs" >>"$OUT/smcount.jsonl"
cat "$OUT/smcount.jsonl"

step a fault in one MPS client, a client beside it, a tenant outside MPS
T "$C" run -q -n 22 -- "$W/fault" loop 8 >"$OUT/fault-beside.json" 2>"$OUT/fault-beside.err" &
p1=$!
CARVE_MPS_DIR=$W/nomps T "$C" run -q -n 22 -- "$W/fault" loop 8 >"$OUT/fault-outside.json" 2>"$OUT/fault-outside.err" &
p2=$!
sleep 3
T "$C" run -q -n 22 -- "$W/fault" fault 500 >"$OUT/fault-culprit.json" 2>"$OUT/fault-culprit.err"
echo "culprit exit $?"
wait $p1; echo "beside exit $?"
wait $p2; echo "outside exit $?"
"$C" ls >"$OUT/ls-after-fault.txt" 2>&1
"$C" ls -o json >"$OUT/ls-after-fault.json" 2>&1
mkdir -p "$OUT/mps-log" && cp "$W"/mps/log/* "$OUT/mps-log/" 2>/dev/null
cat "$OUT"/fault-*.json "$OUT/ls-after-fault.txt"

step what being outside MPS costs: a GEMM beside a compute-heavy MPS client
gemm() { T "$@" "$C" bench __gemm --n 2048 --reps 300; }
{
	echo "{\"setup\":\"MPS, alone\",\"ms\":$(gemm "$C" run -q -n 33 --)}"
	echo "{\"setup\":\"outside MPS, alone\",\"ms\":$(CARVE_MPS_DIR=$W/nomps gemm "$C" run -q -n 33 --)}"
	"$C" run -q -n 33 -- "$C" bench __competitor --kind compute >/dev/null &
	comp=$!
	sleep 4
	echo "{\"setup\":\"MPS, beside an MPS client\",\"ms\":$(gemm "$C" run -q -n 33 --)}"
	echo "{\"setup\":\"outside MPS, beside an MPS client\",\"ms\":$(CARVE_MPS_DIR=$W/nomps gemm "$C" run -q -n 33 --)}"
	kill $comp; wait $comp 2>/dev/null
} >"$OUT/outside-mps.jsonl"
python3 - "$OUT/outside-mps.jsonl" <<'PY'
import json, sys, statistics
for l in open(sys.argv[1]):
    r = json.loads(l); ms = sorted(r["ms"])
    print(f'{r["setup"]:40s} p50 {ms[len(ms)//2]:.3f} ms  p99 {ms[int(0.99*(len(ms)-1))]:.3f} ms  n {len(ms)}')
PY
step done
