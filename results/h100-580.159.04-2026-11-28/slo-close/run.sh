#!/usr/bin/env bash
# slo-close/: what issue 31's last runs measured. One device call a lease,
# from the repository root with bin/ built (bin/carve at 7da8de2;
# bin/old/carve at e3c1b07, whose LS exits right after its last request).
#   f: the BE's recovery after the LS's last request, resnet50 graphs at
#      450/s beside densenet161, LS first, 8 s a setup, tide share 0.5 and
#      --slo 2x: bin/old/carve, bin/carve (the LS idles after its last
#      request until the run ends), and bin/carve with a shim whose
#      CARVE_NODE_QUIET_NS is 200 ms (bin/q: how long a BE's queue stays
#      bounded after the LS's last request).
#   g: bin/carve: resnet50 at 675/s (three quarters of the LS's capacity),
#      both orders, MPS 75/25 and 85/15 and --slo 2x; then the load step
#      (efficientnet_b0/vit_b_16 about 540/s: 270, 810, 270, 10 s each),
#      which SERVE_TO=180 cut short (exit 124).
#   h: bin/carve at d6022c5 (bench serve keeps the BE's rates after the LS's
#      last request): f's resnet50 setups with it, then g's load step again.
set -u
gunzip -f bin/carve.gz
make bin/libcarve.so >/dev/null
case ${LEASE:?LEASE: f, g or h} in
f)
	gunzip -f bin/old/carve.gz && cp bin/libcarve.so bin/old/
	mkdir -p bin/q && cp bin/carve bin/q/ && cp shim/carve_node.h /tmp/carve_node.h
	sed -i 's|^#define CARVE_NODE_QUIET_NS 1000000000ull|#define CARVE_NODE_QUIET_NS 200000000ull|' shim/carve_node.h
	grep -n 'define CARVE_NODE_QUIET_NS' shim/carve_node.h >"$OUT/q.txt"
	make bin/libcarve.so >/dev/null && cp bin/libcarve.so bin/q/
	cp /tmp/carve_node.h shim/carve_node.h && make bin/libcarve.so >/dev/null
	for b in old new q; do
		c=$PWD/bin/$b/carve
		[ $b = new ] && c=$PWD/bin/carve
		CARVE=$c PART=resnet-50 ORDERS=ls-first MECHANISMS=tide TIDE=8:300us:0.5,8:300us:1:slo=2x SERVE_TO=170 \
			experiments/slo/run.sh "$OUT/f-$b" >"$OUT/f-$b.out" 2>&1
	done ;;
g)
	PART=resnet-75 SPLITS=75,85 MECHANISMS=mps-split,tide SERVE_TO=380 \
		experiments/slo/run.sh "$OUT/g-resnet-75" >"$OUT/g-resnet-75.out" 2>&1
	PART=step SERVE_TO=180 experiments/slo/run.sh "$OUT/g-step" >"$OUT/g-step.out" 2>&1 ;;
h)
	PART=resnet-50 ORDERS=ls-first MECHANISMS=tide TIDE=8:300us:0.5,8:300us:1:slo=2x SERVE_TO=170 \
		experiments/slo/run.sh "$OUT/h-resnet-50" >"$OUT/h-resnet-50.out" 2>&1
	PART=step SERVE_TO=330 experiments/slo/run.sh "$OUT/h-step" >"$OUT/h-step.out" 2>&1 ;;
esac
cd "$OUT" && for d in */; do tar czf "${d%/}.tgz" "$d" && rm -rf "$d"; done
