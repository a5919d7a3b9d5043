#!/usr/bin/env bash
# slo-bottom/: each lease one device call, run from the repository root with
# bin/ built (bin/carve; for an A/B, another build in bin/old/carve).
#   a, b, c: LEASE=a run.sh (bin/carve, then bin/old/carve, in one lease)
#   d:       the final build at half capacity (below)
#   e:       the final build at 75% of capacity, 30 s a setup (below)
# a: bin/carve 3d258bf (RefBusy), bin/old/carve 5a66a40.
# b: bin/carve 3d258bf with b-bottom.patch (and 571a4d5's View.Paused), bin/old/carve 3d258bf.
# c: bin/carve 571a4d5's code (built as 3d258bf-crowded), bin/old/carve 3d258bf.
# d: bin/carve e3a100f (571a4d5's code); e: bin/carve 19e909f (the same).
set -u
ab() {
	gunzip -f bin/carve.gz bin/old/carve.gz
	make bin/libcarve.so >/dev/null && cp bin/libcarve.so bin/old/
	for arm in new old; do
		if [ "$arm" = old ]; then export CARVE=$PWD/bin/old/carve; else unset CARVE; fi
		PART=vision-75 MECHANISMS=tide TIDE=8:300us:1:slo=2x,8:300us:1:slo=2x:mark SERVE_TO=270 \
			experiments/slo/run.sh "$OUT/$LEASE-$arm" >"$OUT/$LEASE-$arm.out" 2>&1
	done
}
half() {
	gunzip -f bin/carve.gz
	make bin/libcarve.so >/dev/null
	PART=vision-50 MECHANISMS=tide TIDE=8:300us:1:slo=2x,8:300us:1:slo=2x:mark SERVE_TO=250 \
		experiments/slo/run.sh "$OUT/d-vision-50" >"$OUT/d-vision-50.out" 2>&1
	PART=resnet-50 SPLITS=75 TIDE=8:300us:1:slo=2x:mark SERVE_TO=300 \
		experiments/slo/run.sh "$OUT/d-resnet-50" >"$OUT/d-resnet-50.out" 2>&1
}
long() {
	gunzip -f bin/carve.gz
	make bin/libcarve.so >/dev/null
	DURATION=30s PART=vision-75 MECHANISMS=tide TIDE=8:300us:1:slo=2x,8:300us:1:slo=2x:mark SERVE_TO=540 \
		experiments/slo/run.sh "$OUT/e-vision-75-30s" >"$OUT/e-vision-75-30s.out" 2>&1
}
case ${LEASE:?LEASE: a, b, c, d or e} in
d) half ;;
e) long ;;
*) ab ;;
esac
