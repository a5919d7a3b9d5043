#!/usr/bin/env bash
# carve tide on a GPU machine: how fast an LS tenant's shim sees its work
# done, what a launch costs per class (react rounds, carve bench overhead),
# whether graph replays take a new partition, profilers beside the shim,
# then carve bench serve. Usage: [STEPS="react overhead graphs profilers
# serve"] run.sh OUT [serve flags...] (bin/ built: carve, libcarve.so).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT [serve flags]}")
shift
. "$(dirname "$(realpath "$0")")/../common.sh" tide
: "${TO:=120}"

device
nvcc -O2 -arch=sm_90 -o "$W/react" "$E/react.cu" || exit 1
nvcc -O2 -arch=sm_90 -o "$W/fault" "$ROOT/experiments/fit/fault.cu" || exit 1
{ cat /sys/devices/system/clocksource/clocksource0/current_clocksource; "$W/react" clock 200; "$W/react" coarse 200; } >"$OUT/clock.txt" 2>&1
"$C" mps start

STEPS=${STEPS:-react overhead graphs profilers serve}
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has react; then
step LS reaction, and launch cost per class in alternating rounds
MPSENV="CUDA_MPS_PIPE_DIRECTORY=$W/mps/pipe CUDA_MPS_LOG_DIRECTORY=$W/mps/log CUDA_DEVICE_MAX_CONNECTIONS=8"
T "$C" run -q --ls -n 16 -- "$W/react" idle 300 | tee -a "$OUT/react.jsonl"
# each on the same two CPUs (the launching thread and the shim's own), in
# alternating rounds: the spread between processes is larger than the shim
P="taskset -c 2,3"
for round in $(seq "${ROUNDS:-12}"); do
	echo "{\"setup\":\"no shim\",\"r\":$(T $P env $MPSENV "$W/react" launch 20000)}"
	echo "{\"setup\":\"shim loaded, not partitioned\",\"r\":$(T $P env $MPSENV LD_PRELOAD=$ROOT/bin/libcarve.so "$W/react" launch 20000)}"
	echo "{\"setup\":\"carve run\",\"r\":$(T $P "$C" run -q -n 16 -- "$W/react" launch 20000)}"
	echo "{\"setup\":\"carve run --ls\",\"r\":$(T $P "$C" run -q --ls -n 16 -- "$W/react" launch 20000)}"
	echo "{\"setup\":\"carve run --be, no bound\",\"r\":$(T $P "$C" run -q --be --inflight 0 --queue 0 -- "$W/react" launch 20000)}"
	# the default bounds, an LS tenant having run within the second: bounded
	T $P "$C" run -q --ls -n 16 -- "$W/react" launch 100 >/dev/null
	echo "{\"setup\":\"carve run --be, bounded\",\"r\":$(T $P "$C" run -q --be -- "$W/react" launch 20000)}"
done | tee -a "$OUT/react.jsonl"
fi

if has graphs; then
step graph replays after carve set
T "$C" run -q -n 66 -- python3 "$E/graphmask.py" "$C" | tee "$OUT/graphmask.json"
fi

if has profilers; then
step profilers beside the shim
T "$C" run -n 8 -- python3 "$ROOT/experiments/fit/torchprof.py" "carve 8 TPCs" >"$OUT/torchprof-carve8.txt" 2>&1
grep -h '^{' "$OUT/torchprof-carve8.txt"
T "$C" run -q -n 8 --no-mps -- ncu --metrics gpu__time_duration.sum "$W/fault" smids >"$OUT/ncu-carve8.txt" 2>&1
grep -h "distinct\|ERROR\|refus\|holds\|gpu__time" "$OUT/ncu-carve8.txt" | head -8
fi
"$C" mps stop

if has overhead; then
step carve bench overhead
TO=300 T "$C" bench overhead --launches 2000 --rounds 5 --starts 10 --out "$OUT/overhead" >"$OUT/overhead.txt" 2>"$OUT/overhead.log"
cat "$OUT/overhead.txt"
fi

if has serve; then
step carve bench serve "$@"
TO=${SERVE_TO:-430} T "$C" bench serve --out "$OUT/serve" "$@" >"$OUT/serve.txt" 2>"$OUT/serve.log"
cat "$OUT/serve.txt"
fi
step done
