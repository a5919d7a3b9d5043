#!/usr/bin/env bash
# Two shims in one lease, each under experiments/slo/run.sh: bin's (new) and the one
# built from bin/shim-old/shim (old: `git archive REV shim | tar -x -C bin/shim-old`),
# beside the same carve. Usage, from the repository's root on the GPU machine, bin/carve built:
# PARTS="vision-75 ..." BUILDS="new:MECHANISMS old:MECHANISMS" [SPLITS=..] [SERVE_TO=s] OUT=dir ab.sh
# (a-: BUILDS="new:tide old:tide"; d-: BUILDS="new:mps-split,tide old:tide" SPLITS=75). SERVE_TO
# bounds each bench serve; never bound the script from outside: its benches would run on.
set -u
make bin/libcarve.so >/dev/null || exit 1
mkdir -p bin-old && cp bin/carve bin-old/carve
cc -O2 -fPIC -fvisibility=hidden -shared -o bin-old/libcarve.so bin/shim-old/shim/*.c -ldl -pthread || exit 1
for p in $PARTS; do
  for bm in $BUILDS; do
    b=${bm%%:*}; m=${bm#*:}
    c=bin/carve; [ "$b" = old ] && c=bin-old/carve
    MECHANISMS=$m CARVE=$PWD/$c PART=$p experiments/slo/run.sh "$OUT/$p-$b" > "$OUT/$p-$b.out" 2>&1
    echo "== $p $b $m"; grep -E "carve tide|MPS|alone" "$OUT/$p-$b/serve.txt" | cut -c1-250
  done
done
cd "$OUT" && tar czf runs.tgz */ && rm -rf */
