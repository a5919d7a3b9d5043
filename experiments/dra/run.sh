#!/usr/bin/env bash
# carve-dra on a GPU machine: the plugin's prepare path for real (a fake
# kubelet calls its gRPC socket), two claims' tenants alone and together
# under carve's MPS (internal/dra TestGPUClaims). Usage: run.sh OUT
# (bin/ built: carve, libcarve.so, dra.test or dra.test.gz). CARVE_DRA_DAEMON=1:
# carve daemon runs over the claims too (MPS touches for their processes).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" dra
: "${TO:=120}"

device
id -u
nvcc -O2 -arch=sm_90 -o "$W/tenant" "$E/tenant.cu" || exit 1
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
tar czf "$OUT/mps-log.tgz" -C "$CARVE_MPS_DIR" log # who connected, when
"$C" mps stop
step done
