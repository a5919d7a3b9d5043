#!/usr/bin/env bash
# Does the LS's latency under tide depend on which of LS and BE started
# first, and is it the LS's cuDNN autotuning (torch.backends.cudnn.benchmark,
# which serve's LS sets) timed beside a running BE that makes the
# difference? carve bench serve, resnet50 graphs at --rate beside densenet161,
# alone and under tide, both start orders, ROUNDS times: once as bench serve
# runs its LS, once with the LS's autotuning off (the BE's left as it is).
# Usage: [ROUNDS=1 RATE=400 TIDE=8:300us:0.05 SPLITS= DURATION=8s
# VARIANTS="autotune noautotune"] run.sh OUT (bin/carve built; SPLITS=85
# adds MPS at an 85%/15% split; VARIANTS=autotune: only as serve runs it).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" order
: "${ROUNDS:=1}"
: "${RATE:=400}" "${TIDE:=8:300us:0.05}" "${SPLITS:=}" "${DURATION:=8s}"
mech=tide
[ -n "$SPLITS" ] && mech=tide,mps-split
device
# python3 with the LS's cudnn.benchmark turned off: serve runs its scripts
# as python -c SCRIPT, the LS's the one that says it is latency-sensitive
cat >"$W/python-noautotune" <<'PY'
#!/usr/bin/env bash
if [ "${1:-}" = -c ] && [[ "$2" == *"latency-sensitive service"* ]]; then
	s=${2/cudnn.benchmark = True/cudnn.benchmark = False}
	shift 2
	exec python3 -c "$s" "$@"
fi
exec python3 "$@"
PY
chmod +x "$W/python-noautotune"
for r in $(seq "$ROUNDS"); do
	for v in ${VARIANTS:-autotune noautotune}; do
		py=python3
		[ $v = noautotune ] && py=$W/python-noautotune
		step "round $r, LS $v"
		TO=${SERVE_TO:-300} T "$C" bench serve --ls resnet50:graph --be densenet161 --rates "$RATE" --mechanisms $mech \
			--tide "$TIDE" ${SPLITS:+--mps-splits "$SPLITS"} --idle=false --orders ls-first,be-first \
			--duration "$DURATION" --python "$py" \
			--out "$OUT/serve-$v-$r" >"$OUT/serve-$v-$r.txt" 2>"$OUT/serve-$v-$r.log"
		echo "exit $?"
		cat "$OUT/serve-$v-$r.txt"
	done
done
step done
