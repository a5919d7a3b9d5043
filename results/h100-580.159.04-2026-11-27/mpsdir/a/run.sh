#!/usr/bin/env bash
# new build (CARVE_MPS_DIR in the client env) vs old, vision-75, one lease
set -u
make bin/libcarve.so >/dev/null 2>&1 || { echo shim build failed; exit 1; }
gunzip -c bin/old/carve.gz > bin/old/carve && chmod +x bin/old/carve && cp bin/libcarve.so bin/old/
R=$OUT/r; mkdir -p $R
PART=vision-75 MECHANISMS=tide ORDERS=be-first,ls-first,be-ready-first SERVE_TO=280 WATCH=1 experiments/slo/run.sh $R/new > $R/new.out 2>&1
gzip -f $R/new/watch.jsonl 2>/dev/null
CARVE=$PWD/bin/old/carve PART=vision-75 MECHANISMS=tide ORDERS=be-first,ls-first SERVE_TO=220 experiments/slo/run.sh $R/old > $R/old.out 2>&1
tar czf $OUT/r.tgz -C $OUT r
