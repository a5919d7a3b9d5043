#!/usr/bin/env bash
# The start-order effect taken apart (cause.py): LS processes started beside
# one running BE, the BE stopped or running while each builds and warms up
# its model (cuDNN's benchmark mode on or off) and while it captures its
# graph; each LS's graph replayed alone and beside the BE, served at RATE
# beside it, and its kernels compared. Usage: [ROUNDS=2 RATE=750] cause.sh
# OUT (bin/carve and bin/libcarve.so built). OUT/cause.txt: a JSON line an
# LS and the table; OUT/graphs.tar.gz: each LS's graph as DOT.
set -u
OUT=$(realpath "${1:?usage: cause.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" cause
: "${ROUNDS:=2}" "${RATE:=750}"
device
"$C" version
step start carve\'s MPS
T "$C" mps start || exit 1
step "cause.py, $ROUNDS rounds, serving at $RATE/s"
TO=${CAUSE_TO:-420} T python3 "$E/cause.py" --carve "$C" --out "$W/cause" --rounds "$ROUNDS" --rate "$RATE" >"$OUT/cause.txt"
echo "exit $?"
cat "$OUT/cause.txt"
cp "$W"/cause/*.txt "$OUT/" 2>/dev/null
tail -n 5 "$W"/cause/*.err >"$OUT/ls-stderr.txt" 2>&1
tar -C "$W/cause" -czf "$OUT/graphs.tar.gz" $(cd "$W/cause" && ls *.dot 2>/dev/null)
step done
