#!/usr/bin/env bash
# The start-order effect taken apart (cause.py): LS processes started beside
# one running BE, the BE stopped or running while each builds and warms up
# its model (cuDNN's benchmark mode on or off) and while it captures its
# graph; each LS's graph replayed alone and beside the BE, served at RATE
# beside it, and its kernels compared. Usage: [ROUNDS=2 RATE=750 CONDS=a,b
# BE_ARGS="name:flags;..."] cause.sh OUT (bin/carve and bin/libcarve.so
# built). BE_ARGS runs it all once a BE variant, the BE with more carve run
# flags each time (e.g. "default:;epoch1s:--epoch=1s"). OUT/cause.txt (or
# cause-NAME.txt a variant): a JSON line an LS and the table;
# OUT/graphs.tar.gz: each LS's graph as DOT.
set -u
OUT=$(realpath "${1:?usage: cause.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" cause
: "${ROUNDS:=2}" "${RATE:=750}" "${CONDS:=}" "${BE_ARGS:=}"
device
"$C" version
step start carve\'s MPS
T "$C" mps start || exit 1
IFS=';' read -ra variants <<<"${BE_ARGS:-:}"
for v in "${variants[@]}"; do
	name=${v%%:*} flags=${v#*:}
	f=$OUT/cause${name:+-$name}.txt
	step "cause.py, $ROUNDS rounds, serving at $RATE/s, BE flags '$flags'"
	TO=${CAUSE_TO:-420} T python3 "$E/cause.py" --carve "$C" --out "$W/cause" --rounds "$ROUNDS" --rate "$RATE" \
		--conds="$CONDS" --be-args="$flags" >"$f"
	echo "exit $?"
	cat "$f"
done
cp "$W"/cause/*.txt "$OUT/" 2>/dev/null
tail -n 5 "$W"/cause/*.err >"$OUT/ls-stderr.txt" 2>&1
tar -C "$W/cause" -czf "$OUT/graphs.tar.gz" $(cd "$W/cause" && ls *.dot 2>/dev/null)
step done
