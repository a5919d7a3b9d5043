# Shared setup of the partitioning scripts, sourced by them: the start all
# experiment scripts share (../common.sh), the shim and the test programs
# built, and helpers to record results (one JSON object per line in $R).
OUT=$(realpath "${1:?usage: $(basename "$0") OUTDIR}")
. "$(dirname "${BASH_SOURCE[0]}")/../common.sh" exp
CARVE=$C
R=$OUT/results.jsonl
: >"$R"
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
