#!/usr/bin/env bash
# Which process came first, with no BE work beside the LS (ctx.py): fresh
# LS and BE processes each round under carve's MPS, the LS alone, ready
# before the BE, or started after a ready, idle BE; each variant of VARIANTS
# ("name:ctx.py flags;...", default carve run) a run. Usage: [ROUNDS=3
# RATE=810 VARIANTS="carve:;plain:--plain;prio:--be-env=CUDA_MPS_CLIENT_PRIORITY=1"]
# ctx.sh OUT (bin/carve and bin/libcarve.so built). OUT/ctx-NAME.txt: a
# JSON line a condition and the table.
set -u
OUT=$(realpath "${1:?usage: ctx.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" ctx
: "${ROUNDS:=3}" "${RATE:=810}" "${VARIANTS:=carve:}"
device
"$C" version
step start carve\'s MPS
T "$C" mps start || exit 1
IFS=';' read -ra variants <<<"$VARIANTS"
for v in "${variants[@]}"; do
	name=${v%%:*} flags=${v#*:}
	step "ctx.py $name ($flags), $ROUNDS rounds, serving at $RATE/s"
	TO=${CTX_TO:-400} T python3 "$E/ctx.py" --carve "$C" --out "$W/ctx" --rounds "$ROUNDS" --rate "$RATE" $flags >"$OUT/ctx-$name.txt"
	echo "exit $?"
	tail -n 10 "$OUT/ctx-$name.txt"
done
tail -n 5 "$W"/ctx/*.err >"$OUT/stderr.txt" 2>&1
tar czf "$OUT/mps-log.tgz" -C "$CARVE_MPS_DIR" log # who connected, when
step done
