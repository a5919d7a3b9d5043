#!/usr/bin/env bash
# Arms in one lease, each experiments/slo/run.sh under its own environment, one carve.
# Usage: ARMS="name:ENV=VAL,ENV=VAL name2:" PARTS="vision-75" MECHANISMS=tide OUT=dir arms.sh
# (b-: ARMS="prio: noprio:CUDA_MPS_CLIENT_PRIORITY=0"; c-: ARMS="bench0:CARVE_SERVE_CUDNN_BENCHMARK=0 bench1:").
set -u
make bin/libcarve.so >/dev/null || exit 1
for p in $PARTS; do
  for arm in $ARMS; do
    n=${arm%%:*}; e=${arm#*:}
    ( IFS=,; for kv in $e; do export "$kv"; done
      PART=$p experiments/slo/run.sh "$OUT/$p-$n" > "$OUT/$p-$n.out" 2>&1 )
    echo "== $p $n ($e)"; grep -E "carve tide|MPS|alone" "$OUT/$p-$n/serve.txt" | cut -c1-250
  done
done
cd "$OUT" && tar czf runs.tgz */ && rm -rf */
