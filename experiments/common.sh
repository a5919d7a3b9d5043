# The start every experiment script shares, sourced after it has set OUT
# (its first argument): OUT made; E, the script's directory, and ROOT; a
# scratch directory W holding carve's state, removed at exit with any MPS
# daemon of carve's in it stopped; C, bin/carve; the output also logged to
# OUT/log.txt; T, a command under timeout ${TO:-150} s; step, a header with
# the time; device, the GPU into OUT/device.txt and its topology into
# OUT/topo.txt. Usage: . experiments/common.sh NAME (the scratch prefix).
mkdir -p "$OUT"
E=$(dirname "$(realpath "$0")")
ROOT=$(realpath "$(dirname "${BASH_SOURCE[0]}")/..")
W=$(mktemp -d "/tmp/carve-${1:-exp}.XXXX")
export CARVE_CACHE_DIR=$W/cache CARVE_RUNTIME_DIR=$W/rt CARVE_MPS_DIR=$W/mps PYTHONUNBUFFERED=1
C=${CARVE:-$ROOT/bin/carve} # CARVE: another build of carve, libcarve.so beside it
exec > >(tee -a "$OUT/log.txt") 2>&1
trap '"$C" mps stop 2>/dev/null; rm -rf "$W"' EXIT
T() { timeout "${TO:-150}" "$@"; }
step() { echo "== $* ($(date -u +%T))"; }
device() {
	step device
	nvidia-smi --query-gpu=name,uuid,driver_version --format=csv | tee "$OUT/device.txt"
	date -u +%FT%TZ >>"$OUT/device.txt"
	T "$C" topo >"$OUT/topo.txt" 2>&1
}
