#!/usr/bin/env bash
# The bandwidth gate's cost to a tenant alone (issue 33's 3% target): FGPU's
# suite (carve bench __suite: each app REPS timed runs) on half the TPCs under
# carve's MPS, in ROUNDS rounds, each round the three setups one after the
# other so that drift between rounds falls on all alike: carve (no share),
# --bw 0.5 alone (no other share on the GPU: ungated) and --bw 0.5 beside an
# idle neighbour with a share on the other half (gated: its kernels timed
# and kept to at most an epoch of work in flight outside its slot).
# With OLD (another build's carve, libcarve.so beside it), a fourth setup:
# its gate beside the same idle neighbour.
# Usage: [ROUNDS=5] [REPS=300] [OLD=...] cost.sh OUT (bin/ built: carve, libcarve.so).
# OUT/SETUP-ROUND.json: the suite's times (ms by app); OUT/cost.txt: each
# app's median over rounds of its mean time, and the ratios.
set -u
OUT=$(realpath "${1:?usage: cost.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" bwcost
: "${ROUNDS:=5}" "${REPS:=300}"
device
"$C" version
T "$C" mps start || exit 1
for r in $(seq "$ROUNDS"); do
	step "round $r of $ROUNDS"
	TO=60 T "$C" run -t 0-32 -- "$C" bench __suite --reps "$REPS" >"$OUT/carve-$r.json"
	TO=60 T "$C" run -t 0-32 --bw 0.5 -- "$C" bench __suite --reps "$REPS" >"$OUT/bw-alone-$r.json"
	"$C" run -t 33-65 --bw 0.5 -- sleep 297 &
	peer=$!
	sleep 1
	TO=60 T "$C" run -t 0-32 --bw 0.5 -- "$C" bench __suite --reps "$REPS" >"$OUT/bw-idle-peer-$r.json"
	pkill -f 'sleep 297' # the neighbour's program: carve run then removes its block
	wait "$peer"
	if [ -n "${OLD:-}" ]; then # another build's gate, beside the same idle neighbour
		"$C" run -t 33-65 --bw 0.5 -- sleep 297 &
		peer=$!
		sleep 1
		TO=60 T "$OLD" run -t 0-32 --bw 0.5 -- "$C" bench __suite --reps "$REPS" >"$OUT/old-idle-peer-$r.json"
		pkill -f 'sleep 297'
		wait "$peer"
	fi
	"$C" ls -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print("tenants left:", len(d) if isinstance(d, list) else d)'
done
"$C" mps stop
python3 - "$OUT" <<'PY' | tee "$OUT/cost.txt"
import glob, json, statistics as st, sys, os
out = sys.argv[1]
setups = ["carve", "bw-alone", "bw-idle-peer", "old-idle-peer"]
means = {}  # setup -> app -> [mean of each round]
for s in setups:
    for f in sorted(glob.glob(f"{out}/{s}-*.json")):
        try:
            d = json.load(open(f))
        except Exception as e:
            print(f"{os.path.basename(f)}: {e}")
            continue
        for app, ms in d.items():
            means.setdefault(s, {}).setdefault(app, []).append(st.mean(ms))
apps = sorted(means.get("carve", {}))
print("app | carve ms (median of round means, min-max) | bw alone ms | x carve | bw beside idle peer ms | x carve | OLD's gate beside idle peer ms | x carve")
print("--- | --- | --- | --- | --- | --- | --- | ---")
for a in apps:
    row = [a]
    base = st.median(means["carve"][a])
    row.append(f"{base:.4f} ({min(means['carve'][a]):.4f}-{max(means['carve'][a]):.4f})")
    for s in setups[1:]:
        v = means.get(s, {}).get(a)
        if not v:
            row += ["-", "-"]
            continue
        m = st.median(v)
        row += [f"{m:.4f} ({min(v):.4f}-{max(v):.4f})", f"{m / base:.3f}"]
    print(" | ".join(row))
PY
