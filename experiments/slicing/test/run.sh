#!/usr/bin/env bash
# test/run.sh: slicer.so's host side on a fake driver (fakedrv.c), no GPU:
# the wrappers reached through dlsym and cuGetProcAddress, first launches
# whole, the scan and copies, the pieces' descriptor edits, and every block
# of every launch run exactly once, for K=2, K=4 and random K=3 splits.
# Usage: experiments/slicing/test/run.sh (gcc). Prints a line per case and
# "N passed, N failed".
set -u
T=$(dirname "$(realpath "$0")")
S=$(dirname "$T")
ROOT=$(realpath "$S/../..")
B=$(mktemp -d /tmp/slicer-test.XXXX)
trap 'rm -rf "$B"' EXIT
gcc -O2 -Wall -Wextra -fPIC -shared -I"$ROOT/shim" -I"$S" -o "$B/slicer.so" "$S/slicer.c" -ldl -pthread &&
	gcc -O2 -Wall -Wextra -fPIC -shared -o "$B/libcuda.so.1" "$T/fakedrv.c" &&
	gcc -O2 -Wall -Wextra -o "$B/app" "$T/app.c" -ldl || exit 1
# a prologue as prologue.py writes it: 128 bytes, the immediate at bit 160
printf 'bytes=%0256d\nimm_bit=160\nimm_delta=0\n' 0 >"$B/prologue.txt"
pass=0 fail=0
one() {
	local label=$1 out
	shift
	out=$(cd "$B" && env LD_LIBRARY_PATH="$B" LD_PRELOAD="$B/slicer.so" SLICE_PROLOGUE="$B/prologue.txt" \
		FAKE_CLUSTER_FN=5 FAKE_NO_MARK_FN=6 "$@" ./app 2>"$B/err")
	local rc=$?
	echo "$label: ${out##*$'\n'}"
	[ $rc -eq 0 ] || { echo "$out"; cat "$B/err"; }
	grep '^{"slicer"' "$B/err" | cut -c1-600
	if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
}
one k2 SLICE_PIECES=2
one k4 SLICE_PIECES=4
one k3-random SLICE_PIECES=3 SLICE_SEED=1
one k3-random-log SLICE_PIECES=3 SLICE_SEED=2 SLICE_LOG=1
# SLICE_TIME with SLICE_DRY: everything runs whole; what would be sliced is
# timed as sliceable, and each fake launch's 250 us counts as long
one k2-time-dry SLICE_PIECES=2 SLICE_TIME=1 SLICE_DRY=1
if grep -q '"time":{"dry_run":true,"long_us":200,.*"sliceable_dry_run":{"launches":[1-9][0-9]*,"ms":[0-9.]*,"long":[1-9]' "$B/err" &&
	! grep -q '"sliced":[1-9]' "$B/err"; then
	pass=$((pass + 1))
	echo "k2-time-dry: the report times sliceable launches, and none was sliced"
else
	fail=$((fail + 1))
	echo "k2-time-dry: FAILED: no sliceable launches timed, or some sliced"
fi
echo "slicer: $pass passed, $fail failed"
[ $fail -eq 0 ]
