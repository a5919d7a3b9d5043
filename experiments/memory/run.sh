#!/usr/bin/env bash
# carve's memory limits on a GPU machine: what a context takes; which
# allocation and memory-query entry points PyTorch, CuPy and JAX resolve and
# how the shim handles each (CARVE_TRACE_PROCS); what each framework is told
# under a 10 GiB limit, and a training step in it; a BE taking memory until
# its limit beside an LS serving requests, in MPS and outside it; the
# account's cost on an allocation loop and on a model's first step, against
# no shim, in alternation; firstprof (not among the default STEPS), the
# first step's CUDA calls under torch.profiler; firstcalls (not among the
# default STEPS either), the time inside each driver call in the first
# step (calltime.c); firstgemm (not among the defaults), the first use of
# cuBLAS in a process (firstgemm.cu) in each setup. Usage: [STEPS="context
# lookups frameworks beside cost firststep"] run.sh OUT (bin/ built:
# carve, libcarve.so).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" memory
: "${TO:=120}"
: "${ROUNDS:=30}"
STEPS=${STEPS:-context lookups frameworks beside cost firststep}
has() { [[ " $STEPS " == *" $1 "* ]]; }

device
nvcc -O2 -o "$W/allocloop" "$E/allocloop.cu" -L/usr/local/cuda/lib64/stubs -lcuda || exit 1
used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; }
hold='import torch, time; torch.ones(64, 64, device="cuda") @ torch.ones(64, 64, device="cuda"); torch.cuda.synchronize(); print("up", flush=True); time.sleep(4)'

"$C" mps start
if has context; then
step what a context takes, outside MPS and as an MPS client
"$C" mps stop
base=$(used)
python3 -c "$hold" | { read -r _; echo "{\"context\":\"PyTorch, own\",\"mib\":$(( $(used) - base ))}"; cat >/dev/null; } | tee "$OUT/context.jsonl"
"$C" mps start
base=$(used)
T "$C" run -q -n 66 -- python3 -c "$hold" | { read -r _; echo "{\"context\":\"PyTorch, MPS client\",\"mib\":$(( $(used) - base ))}"; cat >/dev/null; } | tee -a "$OUT/context.jsonl"
fi

if has lookups; then
step lookups of memory entry points, per framework
for fw in torch cupy jax; do
	T "$C" run -q -n 66 --mem 10G -- env CARVE_TRACE_PROCS=1 python3 "$E/frameworks.py" "$fw" >"$OUT/lookups-$fw.txt" 2>&1
	echo "$fw: exit $?, $(grep -c 'carve\[' "$OUT/lookups-$fw.txt") lookups logged"
done
fi

if has frameworks; then
step frameworks under a 10 GiB limit, in MPS
for fw in torch cupy jax; do
	T "$C" run -q -n 66 --mem 10G -- python3 "$E/frameworks.py" "$fw" 2>&1 | grep '^{' | tee -a "$OUT/frameworks.jsonl"
done
fi

serve() { # $1: label, $2: carve run flags of the BE ("" for none), $3: LS's carve run flags
	if [ -n "$2" ]; then
		(sleep 3; T "$C" run -q $2 -- python3 "$E/alloc.py" --hold 10 --label "$1 BE") &
	fi
	local be=$!
	T "$C" run -q $3 -- python3 "$ROOT/experiments/ls.py" --rate 200 --seconds 12 --label "$1" | grep '^{'
	[ -n "$2" ] && wait $be # by pid: a bare wait also waits for the log's tee
}
if has beside; then
step BE taking memory until its limit beside an LS, in MPS
{
	serve "MPS, LS alone" "" "--ls -n 16 --mem 8G"
	serve "MPS, LS alone again" "" "--ls -n 16 --mem 8G"
	serve "MPS, LS beside BE --mem 20G" "--be --mem 20G" "--ls -n 16 --mem 8G"
} 2>&1 | grep '^{' | tee "$OUT/beside-mps.jsonl"
"$C" ls -o json >"$OUT/ls-after.json" 2>&1
"$C" mps stop

step the same outside MPS
{
	serve "no MPS, LS alone" "" "--no-mps --ls -n 16 --mem 8G"
	serve "no MPS, LS alone again" "" "--no-mps --ls -n 16 --mem 8G"
	serve "no MPS, LS beside BE --mem 20G" "--no-mps --be --mem 20G" "--no-mps --ls -n 16 --mem 8G"
	T "$C" run -q --no-mps -n 66 --mem 20G -- python3 "$E/alloc.py" --label "no MPS, alone --mem 20G"
	T python3 "$E/alloc.py" --label "no shim, whole GPU"
} 2>&1 | grep '^{' | tee "$OUT/beside-nomps.jsonl"
fi

"$C" mps stop
if has cost; then
step the account\'s cost: an allocation loop, alternating with no shim, $ROUNDS rounds
for r in $(seq "$ROUNDS"); do
	echo "{\"setup\":\"no shim\",\"r\":$(T "$W/allocloop" 5000 1048576)}"
	echo "{\"setup\":\"carve run, no limit\",\"r\":$(T "$C" run -q --no-mps -n 66 -- "$W/allocloop" 5000 1048576)}"
	echo "{\"setup\":\"carve run --mem 20G\",\"r\":$(T "$C" run -q --no-mps -n 66 --mem 20G -- "$W/allocloop" 5000 1048576)}"
done | tee "$OUT/cost-alloc.jsonl" | tail -3
fi
# The setups the first-use steps (firststep, firstgemm) alternate: none, no
# shim; nolimit and limit, carve run without and with --mem 20G; and, to
# tell the parts' costs apart: nohook, a shim that registers no launch hook
# (built here from shim/ with carve_register_hook returning before it
# subscribes): the memory account and the interposed calls without the
# launch callback; dispatch, the shim with a launch hook that returns at
# once (-DCARVE_MEASURE_DISPATCH): the driver's callback dispatch without
# the hook's work; preload, the shim preloaded without carve run (its calls
# interposed, nothing enforced); noshim, carve run with an empty library in
# the shim's place (carve run's process and environment alone).
# setup NAME PROGRAM [ARGS...] runs the program in that setup, labelled.
setup() {
	local s=$1
	shift
	case $s in
	none) T "$@" "no shim" ;;
	nolimit) T "$C" run -q --no-mps -n 66 -- "$@" "carve run, no limit" ;;
	limit) T "$C" run -q --no-mps -n 66 --mem 20G -- "$@" "carve run --mem 20G" ;;
	nohook) T "$C" run -q --no-mps -n 66 --mem 20G --shim "$W/nohook/libcarve.so" -- "$@" \
		"carve run --mem 20G, launch hook not registered" ;;
	dispatch) T "$C" run -q --no-mps -n 66 --shim "$W/libcarve-dispatch.so" -- "$@" \
		"carve run, a launch hook that returns at once" ;;
	preload) LD_PRELOAD=$ROOT/bin/libcarve.so T "$@" "the shim preloaded, no carve run (it enforces nothing)" ;;
	noshim) T "$C" run -q --no-mps -n 66 --shim "$W/empty.so" -- "$@" "carve run, an empty library for a shim" ;;
	esac
}
if has firststep || has firstgemm; then
	mkdir -p "$W/nohook" && cp "$ROOT"/shim/*.c "$ROOT"/shim/*.h "$W/nohook/" &&
		sed -i '0,/carve_gpu_init(cuda);/s//carve_gpu_init(cuda);\n\tif (cuda) return NULL;/' "$W/nohook/hook.c" &&
		grep -q 'if (cuda) return NULL;' "$W/nohook/hook.c" &&
		cc -O2 -fPIC -fvisibility=hidden -shared -o "$W/nohook/libcarve.so" "$W"/nohook/*.c -ldl -pthread || exit 1
	(cd "$ROOT" && cc -O2 -DCARVE_MEASURE_DISPATCH -fPIC -shared -fvisibility=hidden -o "$W/libcarve-dispatch.so" \
		shim/*.c -ldl -pthread) || exit 1
	echo 'void carve_empty(void) {}' >"$W/empty.c" && cc -shared -fPIC -o "$W/empty.so" "$W/empty.c" || exit 1
fi
# each round runs the setups in an order of its own (shuf), so that no
# setup always follows the same one; firstgemm first, being the shorter
if has firstgemm; then
step the first use of cuBLAS in a process, alternating setups, $ROUNDS rounds
nvcc -O2 -o "$W/firstgemm" "$E/firstgemm.cu" -lcublas || exit 1
for r in $(seq "$ROUNDS"); do
	for s in $(shuf -e ${GEMM_SETUPS:-none nolimit nohook dispatch preload noshim}); do
		setup "$s" "$W/firstgemm"
	done
done 2>&1 | grep --line-buffered '^{' | tee "$OUT/firstgemm.jsonl" | tail -2
fi
if has firststep; then
step the account\'s cost: a model\'s first training steps, alternating setups, $ROUNDS rounds
# SETUPS: the setups (default: none nolimit limit, then FIRSTSTEP_MORE's)
for r in $(seq "$ROUNDS"); do
	for s in $(shuf -e ${SETUPS:-none nolimit limit ${FIRSTSTEP_MORE:-}}); do
		setup "$s" python3 "$E/firststep.py"
	done
done 2>&1 | grep --line-buffered '^{' | tee "$OUT/cost-firststep.jsonl" | tail -2
fi
if has firstprof; then
step the first step under torch.profiler: CUDA calls\' CPU time, no shim and carve run --mem 20G, 3 rounds
for r in 1 2 3; do
	T python3 "$E/firstprof.py" "no shim"
	T "$C" run -q --no-mps -n 66 --mem 20G -- python3 "$E/firstprof.py" "carve run --mem 20G"
done 2>&1 | grep --line-buffered '^{' | tee "$OUT/firstprof.jsonl" | cut -c1-200
fi
if has firstcalls; then
step the first step\'s time inside each driver call, CUPTI\'s callbacks, no shim and carve run, 3 rounds
cupti=$(dirname "$(find /usr/local/cuda/ /usr/local/cuda/extras/CUPTI -name cupti.h 2>/dev/null | head -1)")/..
cc -O2 -shared -fPIC -o "$W/calltime.so" "$E/calltime.c" -I"$cupti/include" -L"$cupti/lib64" -L"$cupti/lib" -lcupti || exit 1
export LD_LIBRARY_PATH=$cupti/lib64:$cupti/lib:${LD_LIBRARY_PATH:-}
for r in 1 2 3; do
	CUDA_INJECTION64_PATH=$W/calltime.so CALLTIME=$W/calltime.so T python3 "$E/firststep.py" "no shim"
	T "$C" run -q --no-mps -n 66 -- env CUDA_INJECTION64_PATH="$W/calltime.so" CALLTIME="$W/calltime.so" \
		python3 "$E/firststep.py" "carve run, no limit"
done 2>&1 | grep --line-buffered '^{' | tee "$OUT/firstcalls.jsonl" | cut -c1-300
fi
"$C" mps stop
step done
