#!/usr/bin/env bash
# An LS beside a BE in both start orders, every point of one run: carve
# bench serve with MPS at splits 50/65/75/85 and two tide settings (share
# 0.2; a BE floor of 16 TPCs, unshared), each setup LS first and BE first,
# the LS and the BE alone measured in the same run. PAIR=vision: resnet50
# from CUDA graphs beside densenet161; PAIR=llm: the llm decoder from CUDA
# graphs beside transformer-train. With ALONE=1 it first serves the llm LS
# alone at 10 requests/s (graph, then eager) to read its service time (its
# fastest request), and the pair uses graphs if they served, else eager.
# Usage: PAIR=vision|llm RATES=R[,R]|auto [DURATION=5s ALONE=0
# MECHANISMS=mps-split,tide SPLITS=50,65,75,85 TIDE=...] pairs.sh OUT
# (bin/carve built).
set -u
OUT=$(realpath "${1:?usage: pairs.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" pairs
: "${PAIR:?PAIR=vision or PAIR=llm}" "${RATES:?RATES=requests per second}"
: "${DURATION:=5s}" "${ALONE:=0}" "${MECHANISMS:=mps-split,tide}"
: "${SPLITS:=50,65,75,85}" "${TIDE:=8:300us:0.2,8:300us:1:floor=16}"
device
if [ "$ALONE" = 1 ]; then
	for mode in graph eager; do
		step the llm LS alone, $mode, 10/s for 4 s
		echo go | TO=120 T python3 "$ROOT/internal/workload/serve_ls.py" --model llm --mode $mode --rate 10 --duration 4 \
			>"$OUT/llm-$mode.json" 2>"$OUT/llm-$mode.err"
		echo "exit $?"
		python3 -c 'import json,statistics,sys; r=json.loads(open(sys.argv[1]).read().split("\n")[-2]); l=sorted(r["latencies_ms"]); print("p50 %.2f ms min %.2f ms, %d requests, info %s" % (statistics.median(l), l[0], len(l), r.get("info"))); open(sys.argv[2], "w").write("%.3f" % l[0])' "$OUT/llm-$mode.json" "$OUT/llm-$mode.service" || tail -5 "$OUT/llm-$mode.err"
	done
fi
# the llm LS from graphs where that served alone, else eagerly; RATES=auto:
# half of what it serves alone (1000 / its fastest request in ms)
llm=${LLM:-graph} # LLM=eager chooses it
if [ "$ALONE" = 1 ] && ! [ -s "$OUT/llm-graph.service" ]; then llm=eager; fi
if [ "$RATES" = auto ]; then
	svc=$(cat "$OUT/llm-$llm.service" 2>/dev/null) || { echo "RATES=auto needs ALONE=1 and an llm that served"; exit 1; }
	RATES=$(python3 -c "print(max(1, round(0.5 * 1000 / $svc)))")
	echo "llm:$llm serves a request in $svc ms alone: $RATES requests/s"
fi
case $PAIR in
vision) pair=(--ls resnet50:graph --be densenet161) ;;
llm) pair=(--ls llm:$llm --be transformer-train) ;;
*) echo "PAIR: vision or llm" && exit 2 ;;
esac
step carve bench serve, $PAIR, $RATES/s, both orders
TO=${SERVE_TO:-540} T "$C" bench serve "${pair[@]}" --rates "$RATES" --mechanisms "$MECHANISMS" \
	--mps-splits "$SPLITS" --tide "$TIDE" --orders ls-first,be-first \
	--duration "$DURATION" --idle=false --out "$OUT/serve" >"$OUT/serve.txt" 2>"$OUT/serve.log"
echo "exit $?"
cat "$OUT/serve.txt"
step done
