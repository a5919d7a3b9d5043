#!/usr/bin/env bash
# Issue 31's SLO targets on a GPU machine, one part a call (each fits in
# ten minutes): carve bench serve with --slo 2x and no other knob beside
# MPS's splits, both start orders. Parts (PART=, one of):
#   vision-50   efficientnet_b0 graphs beside vit_b_16 at 540/s (half the LS's capacity)
#   vision-75   the same at 810/s
#   resnet-50   resnet50 graphs beside densenet161 at 450/s
#   resnet-75   the same at 675/s
#   llm-50      llm graphs beside transformer-train at RATE (default 35/s: half of
#               the 70/s it serves alone, order/llm-56 of 2026-11-24 at 80%)
#   step        efficientnet_b0/vit_b_16, a load step about 540/s (270, 810, 270; 10 s each)
#   time        efficientnet_b0/vit_b_16 at 540/s, --slo of a time (SLO, default 9ms)
# Usage: PART=vision-50 [SPLITS=50,65,75,85] [MECHANISMS=tide] [REPEAT=N]
# [ORDERS=be-first,ls-first] [WATCH=S]
# run.sh OUT (bin/ built: carve, libcarve.so). OUT/serve.txt: the table;
# OUT/serve.log: the controller's steps; OUT/serve.json and plots; with
# REPEAT (one run a setting says little: the same setting's attainment
# moved 2 points between runs), each run's in OUT/1, OUT/2, ...
# CARVE_SERVE_CUDNN_BENCHMARK=0 runs the LS with cuDNN's benchmark mode off.
# ORDERS: the start orders, in the order run (default ls-first,be-first).
# WATCH=S: every S seconds over each bench serve, carve ls -o json into
# OUT/watch.jsonl and the GPU's clocks, power and temperature (read only)
# into OUT/smi.csv.
# MECHANISMS: bench serve's --mechanisms (default mps-split,tide; held adds
# the LS beside a BE paused while it serves, the most an SLO could give).
# TIDE: the tide settings of every part but time (default 8:300us:1:slo=2x;
# e.g. 8:300us:1:slo=2x,8:300us:1:slo=2x:mark: the same judged by the LS's
# marked requests too).
# SERVE_TO bounds each bench serve (s): bound nothing from outside, or its
# processes run on into what comes next.
# DURATION: how long each setup is measured (bench serve's --duration; default
# 8s, step's 30s).
set -u
OUT=$(realpath "${1:?usage: PART=... run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" slo
: "${PART:?PART: vision-50, vision-75, resnet-50, resnet-75, llm-50, step or time}" "${TIDE:=8:300us:1:slo=2x}" "${SPLITS:=50,65,75,85}" "${RATE:=35}" "${SLO:=9ms}" "${MECHANISMS:=mps-split,tide}" "${REPEAT:=1}" "${ORDERS:=ls-first,be-first}" "${WATCH:=}" "${DURATION:=}"
both=(--orders "$ORDERS" --idle=false)
vision=(--ls efficientnet_b0:graph --be vit_b_16)
case $PART in
vision-50) args=("${vision[@]}" --rates 540 --mechanisms "$MECHANISMS" --mps-splits "$SPLITS" --tide "$TIDE" "${both[@]}") ;;
vision-75) args=("${vision[@]}" --rates 810 --mechanisms "$MECHANISMS" --mps-splits "$SPLITS" --tide "$TIDE" "${both[@]}") ;;
resnet-50) args=(--ls resnet50:graph --be densenet161 --rates 450 --mechanisms "$MECHANISMS" --mps-splits "$SPLITS" --tide "$TIDE" "${both[@]}") ;;
resnet-75) args=(--ls resnet50:graph --be densenet161 --rates 675 --mechanisms "$MECHANISMS" --mps-splits "$SPLITS" --tide "$TIDE" "${both[@]}") ;;
llm-50) args=(--ls llm:graph --be transformer-train --rates "$RATE" --mechanisms "$MECHANISMS" --mps-splits "$SPLITS" --tide "$TIDE" "${both[@]}") ;;
step) args=("${vision[@]}" --rates 540 --pattern step --duration "${DURATION:-30s}" --mechanisms tide --tide "$TIDE" --idle=false) ;;
time) args=("${vision[@]}" --rates 540 --mechanisms tide --tide "8:300us:1:slo=$SLO" "${both[@]}") ;;
*) echo "PART $PART: want vision-50, vision-75, resnet-50, resnet-75, llm-50, step or time" >&2; exit 2 ;;
esac
[ -z "$DURATION" ] || [ "$PART" = step ] || args+=(--duration "$DURATION")
device
"$C" version
for i in $(seq "$REPEAT"); do
	o=$OUT
	[ "$REPEAT" = 1 ] || o=$OUT/$i
	mkdir -p "$o"
	step "$PART ($i of $REPEAT): carve bench serve ${args[*]}"
	watch=()
	if [ -n "$WATCH" ]; then
		nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,temperature.memory,utilization.gpu,clocks_event_reasons.active \
			--format=csv -lms "$(awk -v s="$WATCH" 'BEGIN{print int(s*1000)}')" >"$o/smi.csv" 2>&1 &
		watch+=($!)
		(while :; do printf '{"at":"%s","ls":%s}\n' "$(date -u +%T.%N)" "$("$C" ls -o json 2>/dev/null || echo null)"; sleep "$WATCH"; done) >"$o/watch.jsonl" &
		watch+=($!)
	fi
	TO=${SERVE_TO:-570} T "$C" bench serve --out "$o" "${args[@]}" >"$o/serve.txt" 2>"$o/serve.log"
	echo "exit $?"
	[ ${#watch[@]} = 0 ] || kill "${watch[@]}" 2>/dev/null
	cat "$o/serve.txt"
done
step done
