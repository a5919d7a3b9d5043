#!/usr/bin/env bash
# Where carve bench serve's BE jobs spend their GPU time, and a smoke run of
# its LLM services, on a GPU machine. Builds the CUPTI kernel recorder
# (recorder.c); runs each BE job (densenet161, resnet50-train,
# transformer-train) as plain python3 serve_be.py, without carve, under the
# recorder: its warm-up, a pause of PAUSE s, then MEASURE s measured;
# summarizes the records after that pause with carve bench kernels (Markdown
# and JSON); serves the llm LS alone from CUDA graphs and eagerly, RATE
# requests a second; then a short carve bench serve of llm (from graphs, or
# eagerly if that failed) beside transformer-train. Each step goes on
# whatever the one before it did; the end lists those that failed. Usage:
# [STEPS="record ls serve"] [MEASURE=10] [PAUSE=3] [RATE=20] run.sh OUT
# (bin/ built: carve, libcarve.so; make build). All output is in OUT/log.txt.
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" kernels
: "${TO:=90}"
: "${MEASURE:=10}"
: "${PAUSE:=3}"
: "${RATE:=20}" # llm requests a second: a request is some 10-20 ms of decoding
STEPS=${STEPS:-record ls serve}
has() { [[ " $STEPS " == *" $1 "* ]]; }
JOBS="densenet161 resnet50-train transformer-train"
PY=python3
failed=()
fail() { echo "FAILED: $*"; failed+=("$*"); }

if [ ! -x "$C" ] || [ ! -f "$ROOT/bin/libcarve.so" ]; then
	echo "bin/carve or bin/libcarve.so missing: run make build in $ROOT first"
	exit 1
fi
device
$PY -c 'import torch, torchvision, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)' 2>&1 | tee "$OUT/python.txt"

step build the kernel recorder
recorder=
if (set -o pipefail; "$E/build.sh" "$W/libkrec.so" | tee "$OUT/recorder.txt"); then
	recorder=$W/libkrec.so
else
	fail "the kernel recorder did not build (see above)"
fi

# record JOB: serve_be.py --model JOB under the recorder; "go" PAUSE s after
# it is ready, so that its warm-up ends in an idle gap
record() {
	local job=$1 dir=$OUT/kernels
	local in=$W/$job.in out=$dir/$job.out
	rm -f "$in" && mkfifo "$in" || { fail "$job: no fifo"; return; }
	CUDA_INJECTION64_PATH=$recorder CARVE_KERNELS_OUT=$dir/$job.%p.tsv \
		T $PY "$ROOT/internal/workload/serve_be.py" --model "$job" --duration "$MEASURE" <"$in" >"$out" 2>"$dir/$job.err" &
	local pid=$!
	exec 7>"$in"
	local tries=0
	until grep -qx ready "$out" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null && [ $tries -lt $((5 * TO)) ] || break
		sleep 0.2
		tries=$((tries + 1))
	done
	if grep -qx ready "$out"; then
		echo "$job ready after its warm-up; measuring in ${PAUSE}s"
		sleep "$PAUSE"
		echo go >&7
	fi
	exec 7>&-
	wait "$pid"
	local rc=$?
	local n
	n=$(cat "$dir/$job".*.tsv 2>/dev/null | grep -vc '^#')
	echo "$job: exit $rc, $n kernels recorded; its line: $(grep '^{' "$out")"
	grep -h '^# end\|^# not' "$dir/$job".*.tsv 2>/dev/null
	if [ "$rc" != 0 ] || [ "$n" = 0 ]; then
		fail "$job under the recorder (exit $rc, $n kernels); its stderr ends:"
		tail -5 "$dir/$job.err"
	fi
}

if has record && [ -n "$recorder" ]; then
	mkdir -p "$OUT/kernels"
	specs=()
	for job in $JOBS; do
		step "$job under the kernel recorder: warm-up, ${PAUSE}s pause, ${MEASURE}s measured"
		record "$job"
		compgen -G "$OUT/kernels/$job.*.tsv" >/dev/null && specs+=("$job=$OUT/kernels/$job.*.tsv")
	done
	step where the BE jobs\' GPU time goes
	gap=$(awk "BEGIN { print $PAUSE * 2 / 3 }")s
	if [ ${#specs[@]} -gt 0 ]; then
		T "$C" bench kernels --after-gap "$gap" "${specs[@]}" >"$OUT/kernels.md" || fail "carve bench kernels"
		T "$C" bench kernels --after-gap "$gap" --top 40 -o json "${specs[@]}" >"$OUT/kernels.json" || fail "carve bench kernels -o json"
		cat "$OUT/kernels.md"
		# the records again: carve bench kernels --after-gap GAP JOB='OUT/kernels/JOB.*.tsv.gz'
		gzip -1 "$OUT"/kernels/*.tsv && du -ch "$OUT"/kernels/*.tsv.gz | tail -1
	else
		fail "no job left records to summarize"
	fi
fi

if has ls; then
	for mode in graph eager; do
		step "the llm LS alone, $mode, $RATE requests/s for 4 s (no carve)"
		echo go | T $PY "$ROOT/internal/workload/serve_ls.py" --model llm --mode "$mode" --rate "$RATE" --duration 4 \
			>"$OUT/llm-$mode.out" 2>"$OUT/llm-$mode.err"
		rc=$?
		if [ $rc = 0 ] && grep -q '^{' "$OUT/llm-$mode.out"; then
			grep '^{' "$OUT/llm-$mode.out" | $PY -c '
import json, sys
r = json.loads(sys.stdin.readline())
l, info = sorted(r["latencies_ms"]) or [0], r["info"]
q = lambda p: l[min(len(l) - 1, int(p * len(l)))]
print(f"llm {sys.argv[1]}: {len(l)} requests, min {l[0]:.2f} p50 {q(.5):.2f} p99 {q(.99):.2f} ms; {info}")' "$mode"
		else
			fail "llm $mode alone (exit $rc); its stderr ends:"
			tail -8 "$OUT/llm-$mode.err"
		fi
	done
fi

if has serve; then
	for ls in llm:graph llm:eager; do
		step "carve bench serve smoke: $ls beside transformer-train, $RATE/s, carve tide, 4 s"
		TO=240 T "$C" bench serve --out "$OUT/serve-${ls/:/-}" --ls "$ls" --be transformer-train --rates "$RATE" \
			--mechanisms tide --tide 8:300us:0.05 --idle=false --duration 4s >"$OUT/serve-${ls/:/-}.txt" 2>"$OUT/serve-${ls/:/-}.log"
		rc=$?
		cat "$OUT/serve-${ls/:/-}.txt"
		grep '^serve:' "$OUT/serve-${ls/:/-}.log"
		if [ $rc = 0 ]; then
			break # eager only where graph failed
		fi
		fail "carve bench serve with $ls (exit $rc); its log ends:"
		tail -5 "$OUT/serve-${ls/:/-}.log"
		[ $rc = 124 ] && break # out of time: no second try
	done
fi

"$C" mps stop 2>/dev/null
step done
if [ ${#failed[@]} -gt 0 ]; then
	echo "${#failed[@]} step(s) failed:"
	printf '  %s\n' "${failed[@]}"
	exit 1
fi
echo "all steps passed"
