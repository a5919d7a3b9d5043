#!/bin/sh
# fuzz.sh: runs each of carve's fuzz targets (Go native fuzzing) for FUZZTIME
# (default 10m) one after another: the parsers of what users and tenants
# hand carve (partition and device specs, memory limits, the results
# 'carve bench report' reads, control and node blocks as read from disk,
# claim configs, kernel tables). make fuzz runs it; make test runs it with
# FUZZTIME=2000x (a count of inputs each). Each target's seeds already run in go test.
set -eu
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10m}
cd "$(dirname "$0")/.."
for target in \
	FuzzParseTPCs:./internal/partition \
	FuzzParseGPCs:./internal/partition \
	FuzzParseCount:./internal/partition \
	FuzzParseDevices:./internal/partition \
	FuzzParseMemLimit:./internal/ctl \
	FuzzKernelTable:./internal/ctl \
	FuzzReport:./internal/bench \
	FuzzControlBlock:./internal/ctl \
	FuzzNodeBlock:./internal/ctl \
	FuzzClaimConfig:./internal/api/gpu.carve.dev/v1alpha1; do
	name=${target%%:*}
	pkg=${target#*:}
	echo "fuzz: $name ($pkg) for $FUZZTIME"
	CGO_ENABLED=0 $GO test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "$pkg"
done
