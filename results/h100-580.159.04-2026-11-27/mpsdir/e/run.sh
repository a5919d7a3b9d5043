#!/usr/bin/env bash
# the final tree: vision-75 in three start orders, one lease
set -u
gunzip -f bin/carve.gz; make bin/libcarve.so >/dev/null 2>&1 || { echo shim build failed; exit 1; }
R=$OUT/r; mkdir -p $R
PART=vision-75 MECHANISMS=tide ORDERS=be-ready-first,be-first,ls-first SERVE_TO=280 experiments/slo/run.sh $R/vision-75 > $R/vision-75.out 2>&1
tar czf $OUT/r.tgz -C $OUT r
