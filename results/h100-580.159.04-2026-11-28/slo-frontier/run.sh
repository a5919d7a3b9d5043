#!/usr/bin/env bash
# slo-frontier/: what the BE gets beside resnet50 graphs at 450/s (half the
# LS's capacity) under fixed tide dials against the SLO controller, and
# what in the controller's dials holds it back. One device call a lease,
# from the repository root with bin/ built (bin/carve; bin/x/carve built
# with x-queue.patch).
#   a: bin/carve, LS first, 8 s a setup: MPS 75/25, tide --slo 2x and fixed
#      dials (share 0.5, 0.2, 1; share 0.2 on a floor of 8 TPCs); then
#      bin/x/carve with x-noconfine.patch's shim, CARVE_X_QUEUE_FIXED=1
#      (the BE's queue bound stays what it asked at every level) and
#      CARVE_X_NOCONFINE=1 (a steered BE is not kept off the LS's TPCs
#      between its busy periods), --slo 2x.
#   b: resnet50 at 450/s, both orders, 8 s a setup: bin/carve (recal: a
#      calibration made again like the last keeps the level and waits
#      twice as long for the next) with MPS 75/25 and 85/15 and tide --slo
#      2x, then bin/old/carve (d446bf5) with tide --slo 2x.
#      bin/carve of b was built from d446bf5 with recal.patch applied.
#   d: bin/carve d446bf5: more of the frontier at 450/s, LS first, 8 s a
#      setup (MPS 65/35; carve static, the LS on 50 and 58 TPCs, the BE on
#      the rest; tide share 0.7, share 1 on a floor of 8 TPCs, share 0.5 on
#      a floor of 8); then --slo 2x, both orders, 20 s a setup.
#   e: bin/carve d446bf5: the llm pair (llm graphs beside transformer-train
#      at 35/s, half the LS's capacity), --slo 2x, both orders, 8 s a setup.
set -u
R=results/h100-580.159.04-2026-11-28/slo-frontier
gunzip -f bin/carve.gz
make bin/libcarve.so >/dev/null
case ${LEASE:?LEASE: a, b, d or e} in
a)
	PART=resnet-50 ORDERS=ls-first SPLITS=75 MECHANISMS=mps-split,tide SERVE_TO=380 \
		TIDE=8:300us:1:slo=2x,8:300us:0.5,8:300us:0.2,8:300us:1,8:300us:0.2:floor=8 \
		experiments/slo/run.sh "$OUT/a-fixed" >"$OUT/a-fixed.out" 2>&1
	patch -p1 <"$R/x-noconfine.patch" && make bin/libcarve.so >/dev/null && cp bin/libcarve.so bin/x/ && patch -R -p1 <"$R/x-noconfine.patch"
	gunzip -f bin/x/carve.gz
	CARVE=$PWD/bin/x/carve CARVE_X_QUEUE_FIXED=1 CARVE_X_NOCONFINE=1 PART=resnet-50 ORDERS=ls-first MECHANISMS=tide SERVE_TO=150 \
		experiments/slo/run.sh "$OUT/a-x" >"$OUT/a-x.out" 2>&1 ;;
b)
	gunzip -f bin/old/carve.gz && cp bin/libcarve.so bin/old/
	PART=resnet-50 SPLITS=75,85 MECHANISMS=mps-split,tide SERVE_TO=330 \
		experiments/slo/run.sh "$OUT/b-new" >"$OUT/b-new.out" 2>&1
	CARVE=$PWD/bin/old/carve PART=resnet-50 MECHANISMS=tide SERVE_TO=200 \
		experiments/slo/run.sh "$OUT/b-old" >"$OUT/b-old.out" 2>&1 ;;
d)
	mkdir -p "$OUT/d-frontier"
	args=(--ls resnet50:graph --be densenet161 --rates 450 --mechanisms mps-split,static,tide --mps-splits 65
		--static-splits 50,58 --tide 8:300us:0.7,8:300us:1:floor=8,8:300us:0.5:floor=8 --orders ls-first --idle=false)
	{ bin/carve version; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv; echo "carve bench serve ${args[*]}"; } >"$OUT/d-frontier/log.txt" 2>&1
	timeout 320 bin/carve bench serve --out "$OUT/d-frontier" "${args[@]}" >"$OUT/d-frontier/serve.txt" 2>"$OUT/d-frontier/serve.log"
	echo "exit $?" >>"$OUT/d-frontier/log.txt"
	DURATION=20s PART=resnet-50 MECHANISMS=tide SERVE_TO=240 \
		experiments/slo/run.sh "$OUT/d-slo-20s" >"$OUT/d-slo-20s.out" 2>&1 ;;
e)
	PART=llm-50 MECHANISMS=tide SERVE_TO=220 experiments/slo/run.sh "$OUT/e-llm-35" >"$OUT/e-llm-35.out" 2>&1 ;;
esac
cd "$OUT" && for d in */; do tar czf "${d%/}.tgz" "$d" && rm -rf "$d"; done
