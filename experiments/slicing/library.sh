# library.sh: part 2 of issue 22, sourced by run.sh (PARTS=library) in its
# scratch directory W, with E, ROOT, OUT, R (results.jsonl) and step set and
# prologue.txt built. Builds slicer.so, checks its PTX with ptxas, then runs
# step.py plain twice and under LD_PRELOAD=slicer.so with K=2 and K=4 equal
# pieces and K=3 random ones (SLICE_SEED 1 and 2), each in its own process
# under timeout (STEP_TO seconds, default 60; a sliced kernel that hangs the
# GPU queue ends only its run). One JSON line per run in results.jsonl
# ("part":"library": the step's hashes and the slicer's counters), and
# OUT/library-summary.txt: each run identical to the first plain run or not,
# and what was sliced.

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
