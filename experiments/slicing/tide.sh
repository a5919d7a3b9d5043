#!/usr/bin/env bash
# tide.sh OUT: part 3 of issue 22 on a GPU: shim/slice.c, a BE's long
# kernels cut into pieces of whole waves under carve run --be --slice while
# an LS tenant is active, in carve's MPS. PARTS (default "bits wait serve")
# picks what runs, each logged with its verdict to OUT/summary.txt:
#   bits   step.py (resnet50 + transformer, AdamW, 3 steps) as a BE beside
#          an LS tenant kept active (a small kernel every 2 ms): plain,
#          --be, --be --slice 200us and --be --slice 20us (the shortest
#          allowed: cuts the most); each must give plain's hashes, and
#          CARVE_DEBUG's last line says how many launches were cut
#   wait   probe.py, an LS whose requests are one tiny kernel each (Poisson,
#          200/s, 20 s), alone and beside each BE job of serve_be.py under
#          --be and --be --slice for each of SLICES (default 200us 50us):
#          its latency's distribution is what a request waits behind the
#          BE's work; with the BE's throughput over the same time
#   idle   the throughput target: each BE job of serve_be.py (8 s) beside
#          an LS tenant that served once and then sleeps (so it is not
#          active: nothing is cut), --be and --be --slice 200us alternated
#          ROUNDS times (default 3), the order swapped each round
#   serve  carve bench serve, the LS service LS (default resnet50:graph)
#          beside each BE job, tide's setting TIDE (default 8:300us:0.05)
#          with and without :slice=200us, in both start orders (the LS's p99
#          and SLO attainment, the BE's throughput), and, unless IDLE=false,
#          beside an idle LS (no request: nothing cut)
# Usage: make build && experiments/slicing/tide.sh OUT (python3 with torch,
# torchvision and transformers). BE_JOBS: the BE jobs of wait and serve
# (default resnet50-train,densenet161); RATES: serve's LS rates (default
# 200,400); DUR: wait's seconds a setting (default 20); DURATION: serve's
# seconds a setup (default 8s).
set -u
if [ $# -ne 1 ]; then
	echo "usage: tide.sh OUT" >&2
	exit 2
fi
OUT=$(realpath -m "$1")
. "$(dirname "$(realpath "$0")")/../common.sh" slicetide
PY=${PY:-python3}
PARTS=${PARTS:-bits wait idle serve}
BE_JOBS=${BE_JOBS:-resnet50-train,densenet161}
DUR=${DUR:-20}
S=$OUT/summary.txt
: >>"$S"
[ -x "$C" ] && [ -e "$(dirname "$C")/libcarve.so" ] || { echo "$C or libcarve.so beside it missing: run make build first"; exit 1; }
device
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

if has bits || has wait || has idle; then
	step "carve's MPS daemon"
	T "$C" mps start
fi

if has bits; then
	step "an LS tenant kept active"
	rm -f "$W/stop"
	TO=900 T "$C" run --ls -n 16 -- "$PY" -c '
import os, sys, time, torch
x = torch.ones(1 << 16, device="cuda")
while not os.path.exists(sys.argv[1]):
    x.add_(1); torch.cuda.synchronize(); time.sleep(0.002)
' "$W/stop" >"$OUT/ls.txt" 2>&1 &
	LS=$!
	sleep 15 # its first request served

	# bits LABEL ARGS...: step.py under ARGS (none: no carve); its hashes line
	bits() {
		local label=$1
		shift
		step "bits $label: $*"
		CARVE_DEBUG=1 T "$@" "$PY" "$E/step.py" --steps 3 >"$OUT/bits-$label.out" 2>"$OUT/bits-$label.err"
		echo "bits $label rc=$? $(grep -h 'slice:' "$OUT/bits-$label.err" | tail -1)" | tee -a "$S"
	}
	bits plain
	bits be "$C" run --be --
	bits slice200 "$C" run --be --slice 200us --
	bits slice20 "$C" run --be --slice 20us --
	"$PY" - "$OUT" <<'PYEOF' | tee -a "$S"
import json, sys
def h(label):
    for line in open(f"{sys.argv[1]}/bits-{label}.out"):
        if line.startswith('{"steps"'):
            r = json.loads(line)
            return tuple(r[k] for k in ("loss_sha256", "grads_sha256", "params_sha256")), r["step_s"]
    return None, None
a, t = h("plain")
print(f"bits plain: step seconds {t}")
for label in ("be", "slice200", "slice20"):
    b, t = h(label)
    print(f"bits {label}: {'identical to plain' if a and a == b else 'DIFFERENT from plain (or missing)'}; step seconds {t}")
PYEOF
	touch "$W/stop" # it ends itself: a kill of $LS, a subshell, would leave its program running
	wait "$LS"
fi

if has wait; then
	# waitrun LABEL MODEL ARGS...: probe.py beside serve_be.py's MODEL (none:
	# alone) under ARGS, both started together once both are ready
	waitrun() {
		local label=$1 model=$2 bp="" f
		shift 2
		step "wait $label: $model under $*"
		f=$OUT/wait-$label
		rm -f "$W/be-go" "$W/ls-go"
		mkfifo "$W/be-go" "$W/ls-go"
		if [ "$model" != none ]; then
			CARVE_DEBUG=1 TO=300 T "$@" "$PY" "$ROOT/internal/workload/serve_be.py" --model "$model" --duration $((DUR + 1)) \
				<"$W/be-go" >"$f.be" 2>"$f.be.err" &
			bp=$!
			exec 5>"$W/be-go"
		fi
		TO=300 T "$C" run --ls -n 16 -- "$PY" "$E/probe.py" --duration "$DUR" <"$W/ls-go" >"$f.ls" 2>"$f.ls.err" &
		local lp=$!
		exec 4>"$W/ls-go"
		for _ in $(seq 1200); do
			grep -q ready "$f.ls" 2>/dev/null && { [ -z "$bp" ] || grep -q ready "$f.be" 2>/dev/null; } && break
			sleep 0.2
		done
		[ -n "$bp" ] && echo go >&5
		sleep 1
		echo go >&4
		exec 4>&-
		[ -n "$bp" ] && exec 5>&-
		wait "$lp"
		echo "wait $label: probe rc=$?" | tee -a "$S"
		if [ -n "$bp" ]; then
			wait "$bp"
			echo "wait $label: BE rc=$? $(grep -h 'slice:' "$f.be.err" | tail -1)" | tee -a "$S"
		fi
	}
	waitrun alone none
	IFS=, read -ra jobs <<<"$BE_JOBS"
	for m in "${jobs[@]}"; do
		waitrun "$m-tide" "$m" "$C" run --be --
		for sl in ${SLICES:-200us 50us}; do
			waitrun "$m-slice$sl" "$m" "$C" run --be --slice "$sl" --
		done
	done
	"$PY" "$E/wait.py" "$OUT" | tee -a "$S"
fi

if has idle; then
	step "an LS tenant that served once"
	rm -f "$W/stop"
	TO=900 T "$C" run --ls -n 16 -- "$PY" -c '
import os, sys, time, torch
x = torch.ones(1 << 16, device="cuda"); x.add_(1); torch.cuda.synchronize()
while not os.path.exists(sys.argv[1]):
    time.sleep(0.1)
' "$W/stop" >"$OUT/idle-ls.txt" 2>&1 &
	LS=$!
	sleep 10
	IFS=, read -ra jobs <<<"$BE_JOBS"
	for m in "${jobs[@]}"; do
		for r in $(seq "${ROUNDS:-3}"); do
			order="tide slice"
			[ $((r % 2)) = 0 ] && order="slice tide"
			for k in $order; do
				args=(--be --)
				[ $k = slice ] && args=(--be --slice 200us --)
				step "idle $m round $r $k"
				echo go | CARVE_DEBUG=1 TO=150 T "$C" run "${args[@]}" "$PY" "$ROOT/internal/workload/serve_be.py" --model "$m" --duration 8 \
					>"$OUT/idle-$m-$r-$k.be" 2>"$OUT/idle-$m-$r-$k.err"
				echo "idle $m round $r $k rc=$? $(tail -1 "$OUT/idle-$m-$r-$k.be" | cut -c1-60) $(grep -h 'slice:' "$OUT/idle-$m-$r-$k.err" | tail -1)" | tee -a "$S"
			done
		done
	done
	touch "$W/stop" # it ends itself: a kill of $LS, a subshell, would leave its program running
	wait "$LS"
	"$PY" - "$OUT" "$BE_JOBS" <<'PYEOF' | tee -a "$S"
import glob, json, statistics, sys
out = sys.argv[1]
for m in sys.argv[2].split(","):
    rates = {}
    for k in ("tide", "slice"):
        for f in sorted(glob.glob(f"{out}/idle-{m}-*-{k}.be")):
            r = int(f.split("-")[-2])
            for line in open(f):
                if line.startswith("{"):
                    j = json.loads(line)
                    rates.setdefault(r, {})[k] = j["items"] / j["seconds"]
    ratios = [v["slice"] / v["tide"] for v in rates.values() if len(v) == 2]
    print(f"idle {m}: per round tide/slice {[(round(v.get('tide', 0)), round(v.get('slice', 0))) for _, v in sorted(rates.items())]}; "
          f"slice/tide median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})" if ratios else f"idle {m}: no pair")
PYEOF
fi

if has bits || has wait || has idle; then
	T "$C" mps stop
fi

if has serve; then
	step "serve: tide with and without slicing"
	tide=${TIDE:-8:300us:0.05}
	TO=1200 T "$C" bench serve --ls "${LS:-resnet50:graph}" --mechanisms tide --tide "$tide,$tide:slice=200us" \
		--be "$BE_JOBS" --rates "${RATES:-200,400}" --orders ls-first,be-first --idle="${IDLE:-true}" \
		--duration "${DURATION:-8s}" --out "$OUT/serve" >"$OUT/serve.txt" 2>&1
	echo "serve rc=$? (tables: OUT/serve.txt)" | tee -a "$S"
	sed -n '/^PAIR/,$p' "$OUT/serve.txt" | tee -a "$S"
fi
cat "$S"
