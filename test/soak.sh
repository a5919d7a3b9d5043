#!/bin/sh
# soak.sh [COUNT [PACKAGE...]]: runs the tests of the packages that start
# tide's tenants, place them and serve them (the shim's, shim/shimtest;
# ctl, place, daemon, dra and its end-to-end tests; or those given) COUNT times (default 50), with
# two CPU-bound processes beside them for the whole run, so that a test
# that passes only on an idle host fails here. The two are stopped however
# the run ends. dra's end-to-end tests (internal/dra/e2e) run only where
# make kube has built their control plane. make soak runs it; make test does not.
set -eu
count=${1:-50}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- ./shim/shimtest ./internal/ctl ./internal/place ./internal/daemon ./internal/dra ./internal/dra/e2e
cd "$(dirname "$0")/.."
hogs=
stop() {
	for p in $hogs; do
		kill "$p" 2>/dev/null || true
	done
}
trap stop EXIT
trap 'exit 130' INT TERM
for _ in 1 2; do
	sh -c 'while :; do :; done' &
	hogs="$hogs $!"
done
start=$(date +%s)
status=0
CGO_ENABLED=0 ${GO:-go} test -count="$count" "$@" || status=$?
echo "soak: go test -count=$count $* beside 2 CPU-bound processes: exit $status after $(($(date +%s) - start)) s"
exit $status
