#!/usr/bin/env bash
# Two builds of carve on one GPU, in turns: carve bench serve with the same
# flags under bin/ (this build), then OTHER/ (another build's carve and
# libcarve.so), then bin/ again, each into OUT/NAME-N. Usage: ab.sh OUT
# OTHER [serve flags...].
set -u
OUT=$(realpath "${1:?usage: ab.sh OUT OTHER [serve flags]}")
OTHER=$(realpath "${2:?usage: ab.sh OUT OTHER [serve flags]}")
shift 2
. "$(dirname "$(realpath "$0")")/../common.sh" ab
device
i=0
for b in "$ROOT/bin" "$OTHER" "$ROOT/bin"; do
	i=$((i + 1))
	name=$([ "$b" = "$ROOT/bin" ] && echo this || echo other)-$i
	step "$name: $b/carve bench serve $*"
	TO=${SERVE_TO:-200} T "$b/carve" bench serve --out "$OUT/$name" "$@" >"$OUT/$name.txt" 2>"$OUT/$name.log"
	grep "tide\|MPS" "$OUT/$name.txt"
done
step done
