#!/usr/bin/env bash
# BenchmarkLaunchCost (fake driver, no GPU work) on the device host's idle CPUs
set -u
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
gunzip -c bin/shimtest.test.gz > /tmp/shimtest.test && chmod +x /tmp/shimtest.test
nproc; lscpu | grep -i 'model name'
cd shim/shimtest && timeout 170 /tmp/shimtest.test -test.run '^$' -test.bench BenchmarkLaunchCost -test.benchtime 100000x -test.count 8 -test.cpu 2
echo "exit $?"
