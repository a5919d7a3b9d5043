#!/usr/bin/env bash
# carve-dra on a GPU machine: the plugin's prepare path for real (a fake
# kubelet calls its gRPC socket), two claims' tenants alone and together
# under carve's MPS (internal/dra TestGPUClaims). Usage: run.sh OUT
# (bin/ built: carve, libcarve.so, dra.test or dra.test.gz).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
mkdir -p "$OUT"
E=$(dirname "$(realpath "$0")")
ROOT=$(realpath "$E/../..")
W=$(mktemp -d /tmp/carve-dra.XXXX)
export CARVE_CACHE_DIR=$W/cache CARVE_RUNTIME_DIR=$W/rt CARVE_MPS_DIR=$W/mps
C=$ROOT/bin/carve
exec > >(tee -a "$OUT/log.txt") 2>&1
trap '"$C" mps stop 2>/dev/null; rm -rf "$W"' EXIT
step() { echo "== $* ($(date -u +%T))"; }

step device
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv | tee "$OUT/device.txt"
date -u +%FT%TZ >>"$OUT/device.txt"
id -u
nvcc -O2 -arch=sm_90 -o "$W/tenant" "$E/tenant.cu" || exit 1
timeout 120 "$C" topo >"$OUT/topo.txt" 2>&1
"$C" mps start || exit 1

step TestGPUClaims
# a test binary built elsewhere finds recorded data where it was built
[ -e /work/main ] || { mkdir -p /work && ln -s "$ROOT" /work/main; }
T=$ROOT/bin/dra.test
[ -e "$T.gz" ] && { gunzip -c "$T.gz" >"$W/dra.test" && chmod +x "$W/dra.test" && T=$W/dra.test; }
cd "$ROOT/internal/dra" &&
	CARVE_GPU_TESTS=1 CARVE_BIN=$C CARVE_DRA_TENANT=$W/tenant CARVE_DRA_OUT=$OUT \
		timeout 300 "$T" -test.run 'TestGPUClaims|TestContainers' -test.v -test.count=1
echo "exit $?"
"$C" mps stop
step done
