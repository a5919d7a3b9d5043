#!/usr/bin/env bash
# slo-rest/: each lease one device call, run from the
# repository root with bin/ built (bin/carve; for an A/B, another build in
# bin/old/carve).
#   a: efficientnet_b0 graphs beside vit_b_16 at 810/s (75% of capacity),
#      30 s a setup, both orders: the LS beside a BE held paused while it
#      serves (the most an SLO could give it) and tide with --slo 2x.
#      bin/carve 3da9f20.
#   b, c: the same at 20 s a setup, tide with --slo 2x only, bin/carve
#      then bin/old/carve in one lease (c: old first): 802a9e3 (rests)
#      against 3da9f20.
#   d: bin/carve 802a9e3 at half capacity (540/s), 8 s a setup, tide with
#      --slo 2x, both orders (what the BE gets where the LS leaves room).
set -u
gunzip -f bin/carve.gz
make bin/libcarve.so >/dev/null
case ${LEASE:?LEASE: a, b, c or d} in
a)
	DURATION=30s PART=vision-75 MECHANISMS=held,tide SERVE_TO=560 \
		experiments/slo/run.sh "$OUT/a-vision-75-held" >"$OUT/a-vision-75-held.out" 2>&1 ;;
b | c)
	gunzip -f bin/old/carve.gz
	cp bin/libcarve.so bin/old/
	arms="new old"
	[ "$LEASE" = b ] || arms="old new"
	for arm in $arms; do
		if [ "$arm" = old ]; then export CARVE=$PWD/bin/old/carve; else unset CARVE; fi
		DURATION=20s PART=vision-75 MECHANISMS=tide SERVE_TO=280 \
			experiments/slo/run.sh "$OUT/$LEASE-$arm" >"$OUT/$LEASE-$arm.out" 2>&1
	done ;;
d)
	PART=vision-50 MECHANISMS=tide SERVE_TO=190 \
		experiments/slo/run.sh "$OUT/d-vision-50" >"$OUT/d-vision-50.out" 2>&1 ;;
esac
