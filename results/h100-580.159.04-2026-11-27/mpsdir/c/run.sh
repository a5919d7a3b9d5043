#!/usr/bin/env bash
# the build with carve run's MPS found in bench's client env: both orders, several pairs (one lease)
set -u
make bin/libcarve.so >/dev/null 2>&1 || { echo shim build failed; exit 1; }
R=$OUT/r; mkdir -p $R
for p in ${PARTS:-vision-75 resnet-75 vision-50}; do
  PART=$p MECHANISMS=tide ORDERS=be-first,ls-first SERVE_TO=200 experiments/slo/run.sh $R/$p > $R/$p.out 2>&1
done
tar czf $OUT/r.tgz -C $OUT r
