# library.sh: part 2 of issue 22, sourced by run.sh (PARTS=library) in its
# scratch directory W, with E, ROOT, OUT, R (results.jsonl) and step set and
# prologue.txt built. Builds slicer.so, checks its PTX with ptxas, then runs
# step.py plain twice and under LD_PRELOAD=slicer.so with K=2 and K=4 equal
# pieces and K=3 random ones (SLICE_SEED 1 and 2), each in its own process
# under timeout (STEP_TO seconds, default 60; a sliced kernel that hangs the
# GPU queue ends only its run). One JSON line per run in results.jsonl
# ("part":"library": the step's hashes and the slicer's counters), and
# OUT/library-summary.txt: each run identical to the first plain run or not,
# and what was sliced. Then where the GPU time goes, sliceable or not
# (SLICE_TIME=1 SLICE_DRY=1): the step, and carve bench serve's BE jobs
# (BE_MODELS, default densenet161 resnet50-train transformer-train), 3 s
# each: OUT/time-summary.txt.

STEP_TO=${STEP_TO:-60}
PY=${PY:-python3}

step build slicer
gcc -O2 -Wall -fPIC -shared -I"$ROOT/shim" -I"$E" -o slicer.so "$E/slicer.c" -ldl -pthread &&
	gcc -O2 -DSLICER_PTX_MAIN -I"$ROOT/shim" -I"$E" -o slicer-ptx "$E/slicer.c" -ldl -pthread || return 1
./slicer-ptx >"$OUT/slicer.ptx" 2>/dev/null
if ! ptxas -arch=sm_90 -o slicer-ptx.cubin "$OUT/slicer.ptx" >"$OUT/slicer-ptxas.txt" 2>&1; then
	cat "$OUT/slicer-ptxas.txt"
	step "ptxas refused the slicer's PTX (OUT/slicer-ptxas.txt): its kernels will not load, nothing is sliced"
fi
[ -s slicer-ptx.cubin ] && cuobjdump -sass slicer-ptx.cubin >"$OUT/slicer-ptx.sass"

# lib LABEL [VAR=VALUE...]: step.py in its own process with the environment
# given; its JSON line (and the slicer's) into results.jsonl
lib() {
	local label=$1 rc to=false line sl
	shift
	step "library $label: $*"
	timeout -k 5 "$STEP_TO" env "$@" "$PY" "$E/step.py" >"$OUT/$label.out" 2>"$OUT/$label.err"
	rc=$?
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && to=true
	line=$(grep '^{"steps"' "$OUT/$label.out" | tail -1)
	sl=$(grep '^{"slicer"' "$OUT/$label.err" | tail -1)
	sl=${sl#'{"slicer":'}
	sl=${sl%'}'}
	grep -v '^{"slicer"' "$OUT/$label.err" | tail -5 | sed 's/^/  stderr: /'
	echo "{\"part\":\"library\",\"label\":\"$label\",\"env\":\"$*\",\"rc\":$rc,\"timed_out\":$to,\"step\":${line:-null},\"slicer\":${sl:-null}}" >>"$R"
	tail -1 "$R" | cut -c1-400
}

# same LABEL: did run LABEL give plain-1's bits?
same() {
	"$PY" - "$R" "$1" <<'EOF'
import json, sys
runs = {r["label"]: r for r in map(json.loads, open(sys.argv[1])) if r.get("part") == "library"}
a, b = (runs.get(l, {}).get("step") for l in ("plain-1", sys.argv[2]))
sys.exit(0 if a and b and all(a[k] == b[k] for k in ("loss_sha256", "grads_sha256", "params_sha256")) else 1)
EOF
}

SL="LD_PRELOAD=$W/slicer.so SLICE_PROLOGUE=$W/prologue.txt SLICE_LOG=1"
lib plain-1 STEPS=3
lib plain-2 STEPS=3
lib k2 $SL SLICE_PIECES=2 STEPS=3
# when K=2 changes the bits, is it grids with y or z > 1 (GRID_WIDTH with
# more than one row of blocks was never tried)?
same k2 || lib k2-1d $SL SLICE_PIECES=2 SLICE_1D=1 STEPS=3
lib k4 $SL SLICE_PIECES=4 STEPS=3
lib k3-seed1 $SL SLICE_PIECES=3 SLICE_SEED=1 STEPS=3
lib k3-seed2 $SL SLICE_PIECES=3 SLICE_SEED=2 STEPS=3
# where the GPU time goes (SLICE_TIME, everything launched whole: SLICE_DRY):
# the step above, and carve bench serve's BE jobs for 3 s each
lib time-step $SL SLICE_PIECES=2 SLICE_TIME=1 SLICE_DRY=1 STEPS=3
for model in ${BE_MODELS:-densenet161 resnet50-train transformer-train}; do
	step "library time-$model: serve_be.py --model $model, dry run, timed"
	echo go | timeout -k 5 "$STEP_TO" env $SL SLICE_PIECES=2 SLICE_TIME=1 SLICE_DRY=1 \
		"$PY" "$ROOT/internal/workload/serve_be.py" --model "$model" --duration 3 >"$OUT/time-$model.out" 2>"$OUT/time-$model.err"
	rc=$?
	job=$(grep '^{' "$OUT/time-$model.out" | tail -1)
	sl=$(grep '^{"slicer"' "$OUT/time-$model.err" | tail -1)
	sl=${sl#'{"slicer":'}
	sl=${sl%'}'}
	echo "{\"part\":\"time\",\"label\":\"time-$model\",\"rc\":$rc,\"job\":${job:-null},\"slicer\":${sl:-null}}" >>"$R"
done

step library summary
"$PY" - "$R" <<'EOF' | tee "$OUT/library-summary.txt"
import json, sys
runs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("part") == "library"]
base = next((r["step"] for r in runs if r["label"] == "plain-1" and r["step"]), None)
KEYS = ("loss_sha256", "grads_sha256", "params_sha256")
for r in runs:
    s, sl = r["step"], r["slicer"]
    if r["timed_out"]:
        state = f"HUNG (killed after the timeout)"
    elif not s:
        state = f"FAILED rc {r['rc']} (no result: see {r['label']}.err)"
    elif not base:
        state = "no baseline (plain-1 failed)"
    else:
        diff = [k for k in KEYS if s[k] != base[k]]
        state = "identical to plain-1" if not diff else "DIFFERS from plain-1 in " + ", ".join(diff)
    line = f"{r['label']:<10} {state}"
    if s:
        line += f"; steps {s['step_s']} s; loss {s['loss'][-1]:.6f}"
    print(line)
    if sl:
        print(f"    launches {sl['launches_seen']} {sl['by_api']}; sliced {sl['sliced']} into {sl['pieces_launched']} pieces;"
              f" functions seen {sl['functions_seen']}, sliced {sl['functions_sliced']}, never {sl['functions_never']};"
              f" copies {sl['copies_made']} ({sl['copy_bytes']} B); event waits {sl['event_waits']}; pdl sliced {sl['pdl_sliced']};"
              f" late edit failures {sl['late_edit_failures']}")
        print(f"    whole: {json.dumps(sl['whole'])}")
        print(f"    never: {json.dumps(sl['never_by_reason'])}")
        if sl.get("disabled"):
            print(f"    slicer disabled: {sl['disabled']}")
        if r["label"] == "k2":  # which kernels, once: the most launched
            for f in sl.get("functions", [])[:15]:
                print(f"      {f['launches']:>5} launches, {f['sliced']:>5} sliced, {f['code_bytes']:>7} B"
                      f"{', never: ' + f['never'] if f['never'] else ''}  {f['name'][:110]}")
    elif "LD_PRELOAD" in r["env"]:
        print("    no slicer line (the process was killed, or slicer.so was not loaded)")
if len(runs) >= 2 and runs[0]["step"] and runs[1]["step"]:
    same = all(runs[0]["step"][k] == runs[1]["step"][k] for k in KEYS)
    print("baseline: plain-1 and plain-2 " + ("are identical" if same else "DIFFER: the step is not deterministic, no comparison means anything"))
EOF

step where the GPU time goes
"$PY" - "$R" <<'EOF' | tee "$OUT/time-summary.txt"
import json, sys
runs = [r for r in map(json.loads, open(sys.argv[1])) if (r.get("slicer") or {}).get("time")]
SLICEABLE = ("sliced", "sliceable_dry_run")
for r in runs:
    t = r["slicer"]["time"]
    cls = t["by_class"]
    ms = sum(c["ms"] for c in cls.values()) or 1e-9
    long_ms = sum(c["long_ms"] for c in cls.values())
    n_long = sum(c["long"] for c in cls.values())
    share = lambda names, key="ms": sum(cls[c][key] for c in cls if c in names)
    print(f"{r['label']}: {sum(c['launches'] for c in cls.values())} launches timed, {ms:.1f} ms of GPU time"
          f" (dropped {t['dropped']}, unread {t['unread']}, pending {t['pending']})")
    print(f"  sliceable: {100 * share(SLICEABLE) / ms:.1f}% of the time; launches over {t['long_us']} us:"
          f" {n_long}, {100 * long_ms / ms:.1f}% of the time, of which sliceable"
          f" {100 * share(SLICEABLE, 'long_ms') / (long_ms or 1e-9):.1f}%")
    for name, c in sorted(cls.items(), key=lambda kv: -kv[1]["ms"]):
        print(f"    {name:<24} {c['launches']:>6} launches {100 * c['ms'] / ms:5.1f}%  over {t['long_us']} us: {c['long']:>5}"
              f" ({100 * c['long_ms'] / ms:5.1f}% of all the time)")
    for f in r["slicer"].get("functions", [])[:10]:
        print(f"      {100 * f['gpu_ms'] / ms:5.1f}% of the time, {100 * f['sliceable_ms'] / (f['gpu_ms'] or 1e-9):5.1f}% of it"
              f" sliceable, {f['timed']:>5} launches ({f['timed_long']} long){', never: ' + f['never'] if f['never'] else ''}"
              f"  {f['name'][:100]}")
EOF
