# Shared setup of the experiment scripts, sourced by them: a scratch
# directory, carve's state kept inside it, the shim and the test programs
# built, and helpers to record results (one JSON object per line in $R).
OUT=$(realpath "${1:?usage: $(basename "$0") OUTDIR}")
mkdir -p "$OUT"
E=$(dirname "$(realpath "${BASH_SOURCE[0]}")")
ROOT=$(realpath "$E/../..")
W=$(mktemp -d /tmp/carve-exp.XXXX)
export CARVE_CACHE_DIR=$W/cache CARVE_RUNTIME_DIR=$W/rt CARVE_MPS_DIR=$W/mps PYTHONUNBUFFERED=1
CARVE="$ROOT/bin/carve"
R=$OUT/results.jsonl
: >"$R"
exec > >(tee -a "$OUT/log.txt") 2>&1
trap '"$CARVE" mps stop 2>/dev/null; rm -rf "$W"' EXIT
T() { timeout 300 "$@"; }
note() { printf '{"step":"%s",%s}\n' "$1" "$2" >>"$R"; }

echo "== device"
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv
note device "\"gpu\":\"$(nvidia-smi --query-gpu=name --format=csv,noheader)\",\"driver\":\"$(nvidia-smi --query-gpu=driver_version --format=csv,noheader)\",\"date\":\"$(date -u +%FT%TZ)\""

echo "== build"
(cd "$ROOT" && cc -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -o bin/libcarve.so shim/*.c -ldl -pthread) || exit 1
nvcc -O2 -arch=sm_90 -o "$W/fma" "$E/fma.cu" && nvcc -O2 -arch=sm_90 -o "$W/launchcost" "$E/launchcost.cu" || exit 1


# launch_cost N: host ns per empty launch without and with the shim, N
# alternations pinned to one CPU (one JSON line each into $R).
launch_cost() {
	for i in $(seq "$1"); do
		T taskset -c 3 "$W/launchcost" none | tee -a "$R"
		T taskset -c 3 "$CARVE" run -q -t all -- "$W/launchcost" shim_all | tee -a "$R"
	done
}
