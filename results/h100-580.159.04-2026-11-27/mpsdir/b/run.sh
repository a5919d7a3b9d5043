#!/usr/bin/env bash
# touch fix: cuDNN benchmark off; a 1 s timing hold; baseline again (one lease)
set -u
make bin/libcarve.so >/dev/null 2>&1 || { echo shim build failed; exit 1; }
mkdir -p bin/hold && cp bin/carve bin/hold/carve
sed 's/#define CARVE_NODE_TIMING_NS 50000000ull/#define CARVE_NODE_TIMING_NS 1000000000ull/' shim/carve_node.h > /tmp/cn.h && grep -c 1000000000ull /tmp/cn.h
mkdir -p /tmp/hs && cp shim/*.c shim/*.h /tmp/hs/ && cp /tmp/cn.h /tmp/hs/carve_node.h
cc -O2 -Wall -fPIC -fvisibility=hidden -shared -o bin/hold/libcarve.so /tmp/hs/*.c -ldl -pthread || exit 1
R=$OUT/r; mkdir -p $R
CARVE_SERVE_CUDNN_BENCHMARK=0 PART=vision-75 MECHANISMS=tide ORDERS=be-first,ls-first SERVE_TO=200 experiments/slo/run.sh $R/nobench > $R/nobench.out 2>&1
CARVE=$PWD/bin/hold/carve PART=vision-75 MECHANISMS=tide ORDERS=be-first,ls-first SERVE_TO=200 experiments/slo/run.sh $R/hold1s > $R/hold1s.out 2>&1
PART=vision-75 MECHANISMS=tide ORDERS=be-first,ls-first SERVE_TO=170 experiments/slo/run.sh $R/base > $R/base.out 2>&1
tar czf $OUT/r.tgz -C $OUT r
