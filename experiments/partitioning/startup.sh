#!/usr/bin/env bash
# Startup added by carve run, and what the launch hook costs split into the
# driver's callback dispatch and carve's own work.
#   make build && experiments/partitioning/startup.sh OUTDIR
source "$(dirname "$(realpath "$0")")/lib.sh"
nvcc -O2 -arch=sm_90 -o "$W/first" "$E/first.cu" || exit 1
(cd "$ROOT" && cc -O2 -DCARVE_MEASURE_DISPATCH -fPIC -shared -fvisibility=hidden -o "$W/libcarve-dispatch.so" shim/*.c -ldl -pthread) || exit 1
"$CARVE" topo >/dev/null || exit 1
ms() { local s=$(date +%s%N); "$@" >/dev/null 2>&1; local rc=$?; echo "$(( ($(date +%s%N) - s) / 1000 ))" ; return $rc; }
startup() { # LABEL: 30 alternations of the bare program and the program under carve run
	for i in $(seq 30); do
		note startup "\"mode\":\"$1\",\"plain_us\":$(ms "$W/first"),\"carve_us\":$(ms "$CARVE" run -q -t all -- "$W/first")"
	done
}
startup no_mps
"$CARVE" mps start
export CUDA_MPS_PIPE_DIRECTORY=$W/mps/pipe # the bare program joins carve's MPS too
startup mps
"$CARVE" mps stop
unset CUDA_MPS_PIPE_DIRECTORY
echo "== launch cost: none, driver dispatch only, full shim"
for i in $(seq 20); do
	T taskset -c 3 "$W/launchcost" none | tee -a "$R"
	T taskset -c 3 "$CARVE" run -q --shim "$W/libcarve-dispatch.so" -t all -- "$W/launchcost" dispatch_only | tee -a "$R"
	T taskset -c 3 "$CARVE" run -q -t all -- "$W/launchcost" shim_all | tee -a "$R"
done
echo "== done"
