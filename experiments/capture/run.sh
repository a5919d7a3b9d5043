#!/usr/bin/env bash
# Does an LS tenant's CUDA graph capture survive starting beside a running
# BE? A BE (be.py, matmuls until told to stop) runs under carve run --be in
# carve's MPS; N LS tenants (ls.py: a resnet18 warmed up, captured with
# torch.cuda.graph, replayed and checked against eager), PAR at a time,
# each under carve run --ls -n 8, start and end beside it. Writes each
# start's exit status and the last line it printed to OUT/starts.tsv and
# counts them in OUT/summary.txt. Usage: [N=200 PAR=4] run.sh OUT (bin/
# built; CARVE names another build, libcarve.so beside it).
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" capture
: "${N:=200}" "${PAR:=4}"
device
"$C" version
"$C" mps start
touch "$W/run"
step BE
"$C" run --be -- python3 "$E/be.py" "$W/run" >"$OUT/be.txt" 2>&1 &
be=$!
sleep 15 # its context made and its matmuls running
step "$N LS starts, $PAR at a time"
start() {
	local i=$1 out rc
	out=$(TO=90 T "$C" run --ls -n 8 -- python3 "$E/ls.py" 2>&1)
	rc=$?
	printf '%d\t%d\t%s\n' "$i" "$rc" "$(printf '%s' "$out" | grep -v '^carve: pid' | tail -n 1 | tr '\t' ' ')"
}
: >"$OUT/starts.tsv"
for i in $(seq "$N"); do
	start "$i" >>"$OUT/starts.tsv" &
	while [ "$(jobs -rp | grep -vc "^$be$")" -ge "$PAR" ]; do sleep 0.2; done
done
for p in $(jobs -rp); do [ "$p" != "$be" ] && wait "$p"; done
step BE stops
rm -f "$W/run"
wait "$be"
echo "BE exit $?"
tail -n 2 "$OUT/be.txt"
"$C" ls
"$C" mps stop
ok=$(awk -F'\t' '$2 == 0 && $3 == "ok"' "$OUT/starts.tsv" | wc -l)
{
	echo "LS starts: $(wc -l <"$OUT/starts.tsv"), captured, replayed and checked: $ok"
	echo "failed:"
	awk -F'\t' '!($2 == 0 && $3 == "ok")' "$OUT/starts.tsv"
} | tee "$OUT/summary.txt"
step done
