#!/usr/bin/env bash
# carve-dra's claims on the GPU without and with carve daemon (its MPS touches)
set -u
gunzip -f bin/carve.gz; make bin/libcarve.so >/dev/null 2>&1 || { echo shim build failed; exit 1; }
experiments/dra/run.sh $OUT/dra-without
CARVE_DRA_DAEMON=1 experiments/dra/run.sh $OUT/dra-with
for a in without with; do echo "== $a"; tar xzf $OUT/dra-$a/mps-log.tgz -O 2>/dev/null | grep -ci 'new client'; done
