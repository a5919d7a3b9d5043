#!/usr/bin/env bash
set -u
export CARVE_RUNTIME_DIR=/tmp/frt CARVE_MPS_DIR=/tmp/fmps CARVE_CACHE_DIR=/tmp/fcc
C=$PWD/bin/carve
$C version; nvidia-smi --query-gpu=name,uuid,driver_version --format=csv; date -u +%FT%TZ
timeout 20 $C mps start
prog='import torch; x = torch.randn(4096, 4096, device="cuda"); y = (x @ x).sum().item(); print("sms", torch.cuda.get_device_properties(0).multi_processor_count, "ok", y == y)'
timeout 40 $C run -n 16 -- python3 -c "$prog"; echo "plain partition: exit $?"
timeout 40 $C run --ls -n 16 -- python3 -c "$prog"; echo "LS: exit $?"
timeout 40 $C run --be -- python3 -c "$prog"; echo "BE: exit $?"
timeout 20 $C mps stop
timeout 110 $C bench serve --out $OUT/serve --ls resnet50:graph --be densenet161 --rates 450 --mechanisms tide --tide 8:300us:1 --duration 4s --idle=false > $OUT/serve.txt 2> $OUT/serve.log; echo "serve exit $?"
cat $OUT/serve.txt
