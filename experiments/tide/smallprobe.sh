#!/usr/bin/env bash
# Can densenet161's kernels, chosen on the whole GPU, run on a few TPCs?
# Lists its kernels (outside carve), then for each TPC set starts it on
# all TPCs outside MPS, moves it there with carve set after its warm-up,
# and times a few steps; one that has not finished in 60 s is reported as
# hung and killed. Usage: smallprobe.sh OUT [TPC sets...] (bin/ built).
set -u
OUT=$(realpath "${1:?usage: smallprobe.sh OUT [TPC sets...]}")
shift
. "$(dirname "$(realpath "$0")")/../common.sh" small
device
step kernels of one step
T python3 "$E/smallprobe.py" --kernels --trace "$OUT/trace.jsonl" >"$OUT/kernels.jsonl" 2>"$OUT/kernels.err"
wc -l <"$OUT/kernels.jsonl"
for set in "${@:-0-3 4-7 62-65 4-11 0-15}"; do
	step "on TPCs $set"
	# launches one at a time: the launch count where it stops names the kernel
	coproc P { CUDA_LAUNCH_BLOCKING=1 exec "$C" run -q --no-mps -t all -- python3 "$E/smallprobe.py" --label "$set" 2>&1; }
	pid=$P_PID
	read -r -t 120 line <&"${P[0]}"
	if [ "$line" != warm ]; then echo "{\"label\":\"$set\",\"error\":\"no warm-up: $line\"}"; kill -9 $pid; wait $pid; continue; fi
	"$C" ls -o json >"$OUT/ls-warm-$set.json"
	"$C" set -p "$pid" -t "$set" >/dev/null || echo "{\"label\":\"$set\",\"error\":\"carve set failed\"}"
	echo go >&"${P[1]}"
	n=0
	while read -r -t 60 line <&"${P[0]}"; do
		echo "$line"
		n=$((n + 1))
		[ $n -ge 4 ] && break
	done
	if [ $n -lt 4 ]; then
		"$C" ls -o json >"$OUT/ls-hung-$set.json"
		echo "{\"label\":\"$set\",\"hung\":true,\"steps_done\":$n,\"launches_warm\":$(grep -o '"launches": *[0-9]*' "$OUT/ls-warm-$set.json" | grep -o '[0-9]*$'),\"launches_hung\":$(grep -o '"launches": *[0-9]*' "$OUT/ls-hung-$set.json" | grep -o '[0-9]*$')}"
	fi
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
done | tee "$OUT/steps.jsonl"
step done
