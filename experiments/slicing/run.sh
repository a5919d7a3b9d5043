#!/usr/bin/env bash
# Issue 22, part 1: can a launch run only blocks [S, N) of its grid? Builds
# the prologue (prologue.py from template.cu), suffix (the probe) and its
# kernels' cubin, then runs each experiment in its own process under
# timeout (a bad launch descriptor can hang the GPU queue): info first, the
# kernel's code run from copies in each kind of memory, then suffixes and
# random pieces through the kind that worked; under 4 minutes even when
# every edit hangs. Logs to OUT/log.txt, one JSON line per experiment to
# OUT/results.jsonl, a summary at the end (OUT/summary.txt). Usage: run.sh
# OUT (nvcc, cuobjdump). Part 2 ran a PyTorch step under the experiment's
# own preloaded slicer, since retired for shim/slice.c (README.md); the
# step sliced through carve's shim is tide.sh's part bits.
set -u
if [ $# -ne 1 ]; then
	echo "usage: run.sh OUT" >&2
	exit 2
fi
OUT=$(realpath -m "$1")
. "$(dirname "$(realpath "$0")")/../common.sh" slicing
R=$OUT/results.jsonl
: >"$R"
BUDGET=190 # seconds of suffix experiments before the rest is skipped

step device
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv | tee "$OUT/device.txt"
date -u +%FT%TZ >>"$OUT/device.txt"

step build prologue
cd "$W" || exit 1
nvcc -cubin -arch=sm_90 -o template.cubin "$E/template.cu" || exit 1
cuobjdump -sass template.cubin >"$OUT/template.sass"
python3 "$E/prologue.py" template.cubin "$OUT/template.sass" prologue.txt && cp prologue.txt "$OUT/"

step build suffix
nvcc -cubin -arch=sm_90 -I"$ROOT/shim" -o suffix.cubin "$E/suffix.cu" &&
	nvcc -O2 -arch=sm_90 -I"$ROOT/shim" -o suffix "$E/suffix.cu" -lcuda || exit 1
cuobjdump -sass suffix.cubin >"$OUT/suffix.sass"

# run LABEL [VAR=VALUE...] -- MODE ARGS...: one experiment in its own
# process; its JSON line into results.jsonl with the label, the exit code and
# whether the timeout ended it (then the GPU queue hung). Sets LAST to
# pass, fail or hung.
run() {
	local label=$1 envs=() line rc to=false
	shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	if [ "$SECONDS" -gt "$BUDGET" ]; then
		echo "{\"label\":\"$label\",\"skipped\":\"over the time budget\"}" | tee -a "$R"
		LAST=skipped
		return
	fi
	step "$label: ${envs[*]+${envs[*]} }suffix $*"
	line=$(env ${envs[@]+"${envs[@]}"} timeout -k 5 20 ./suffix "$@" 2>"$W/stderr")
	rc=$?
	sed 's/^/  stderr: /' "$W/stderr"
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && to=true
	line=$(printf '%s\n' "$line" | grep '^{' | tail -1)
	echo "{\"label\":\"$label\",\"rc\":$rc,\"timed_out\":$to,\"result\":${line:-null}}" | tee -a "$R"
	case "$line" in
	*'"hung":true'*) LAST=hung ;;
	*) if $to; then LAST=hung; elif [ $rc -eq 0 ]; then LAST=pass; else LAST=fail; fi ;;
	esac
}

run info -- info

# does the GPU run a kernel's exact code from memory the program allocated?
# The code from the cubin, or (devsrc) copied on the GPU from the driver's.
MEM= SRC=cubin
for m in alloc managed vmm; do
	run "copy-$m" -- "copy-$m"
	[ "$LAST" = pass ] && [ -z "$MEM" ] && MEM=$m
done
run copy-vmm-ro -- copy-vmm-ro
run copy-devsrc -- copy-devsrc
[ -z "$MEM" ] && [ "$LAST" = pass ] && MEM=alloc SRC=device
S="SLICE_MEM=$MEM SLICE_SRC=$SRC"

if [ -z "$MEM" ]; then
	step no memory ran copied code: suffixes and pieces skipped
elif [ ! -s prologue.txt ]; then
	step no prologue: suffixes and pieces skipped
else
	run suffix-1 $S -- suffix 1
	if [ "$LAST" != hung ]; then
		run suffix-132 $S -- suffix 132
		run suffix-263 $S -- suffix 263
		run pieces-2 $S -- pieces 2 200
		run pieces-3 $S -- pieces 3 200
		run pieces-8 $S -- pieces 8 100
		run pieces-3-seed7 $S SLICE_SEED=7 -- pieces 3 200
		run pieces-3-invalidate $S SLICE_INVALIDATE=1 -- pieces 3 100
		run pieces-3-prefetch-kept $S SLICE_PREFETCH=keep -- pieces 3 100
		run pieces-3-prefetch-zero $S SLICE_PREFETCH=zero -- pieces 3 100
	fi
fi

step summary
python3 - "$R" <<'EOF' | tee "$OUT/summary.txt"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    res = r.get("result") or {}
    if "skipped" in r:
        print(f"{r['label']:<26} skipped: {r['skipped']}")
        continue
    state = "HUNG" if r["timed_out"] or res.get("hung") else ("pass" if res.get("pass") or (r["rc"] == 0 and res) else "FAIL")
    if not res:
        state += " (no JSON line: crashed or killed)"
    facts = []
    if res.get("hung"):
        facts.append(f"{res.get('kernel')} hung in {res.get('while')}; blocks so far {json.dumps(res.get('blocks_so_far'))}")
    if res.get("error"):
        facts.append(res["error"])
    for k in res.get("kernels", []):
        facts.append(f"{k['kernel']}: v{k['version']} prog {k['program_address']} prefetch {k['prefetch_address_shifted']}>>{k['prefetch_shift']}"
                     f" dtoh {k['dtoh_256']} equals cubin {k.get('dtoh_equals_cubin')} relocs {k['cubin_relocations']}"
                     f" in CUfunction at {k['address_in_CUfunction_at']}")
    for p in res.get("peek", []):
        facts.append(f"peek {p['kernel']}: {p.get('end', p.get('launch'))} equals cubin {p.get('equals_cubin')}")
    for run in res.get("runs", []):
        b = run["blocks"]
        facts.append(f"{run['kernel']}: {'pass' if run['pass'] else 'FAIL'} launch {run['launch']} end {run['end']}"
                     f" counted {run['blocks_counted']}/{run['expected']} ok {b['ok']} missing {b['missing']} wrong {b['wrong']}"
                     f" below S: missing {b['below_S_missing']} ran {b['below_S_ok'] + b['below_S_wrong']}; prefetch {run['prefetch']}")
    for k in res.get("per_kernel", []):
        f = f"{k['kernel']}: {k['passed']} reps passed, {k.get('us_per_rep')} us each"
        if "first_failure" in k:
            f += f"; first failure {json.dumps(k['first_failure'])}"
        facts.append(f)
    if "address_honored" in res:
        facts.append(f"address honored (a copy behind the prologue for S = N ran no block): {res['address_honored']}")
    if res.get("memory_note"):
        facts.append(res["memory_note"])
    print(f"{r['label']:<26} {state}")
    for f in facts:
        print(f"    {f}")
EOF
