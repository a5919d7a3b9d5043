#!/usr/bin/env bash
# carve on a node of two GPUs (written for 2 H200s, 132 SMs each, whose
# topologies this run records in OUT/topo.json and topo.txt):
#  (a) discovery's GPU tests on each GPU alone (CUDA_VISIBLE_DEVICES);
#  (b) two programs each partitioned on both GPUs at once, outside MPS
#      where %smid is real: each GPU's kernels stay on that GPU's
#      partition and each device reports its partition's SM count; a
#      program that sees the GPUs in the other order finds its partitions
#      by UUID; a launch on a GPU not named is refused (exit 86);
#  (c) a two-GPU PyTorch DDP job (NCCL, resnet50, bf16) under carve run
#      --be on both GPUs beside an LS resnet50 service under carve run
#      --ls on GPU 0, in carve's MPS, against the same two as plain
#      time-sliced processes: the LS's p99 and SLO attainment (SLO: 2x its
#      p99 alone), the job's step time (alone, plain, carve);
#  (d) one MPS control daemon for both GPUs: clients on each GPU, and one
#      on both, co-run under it.
# Usage: run.sh OUT. Needs bin/ built (make build; go test -c -o
# bin/discover.test ./internal/discover), nvcc and PyTorch with
# torchvision. About 6 minutes; RATE (LS requests/s, 200) and STEPS (DDP
# steps timed, 100) change the load.
set -u
OUT=$(realpath "${1:?usage: run.sh OUT}")
. "$(dirname "$(realpath "$0")")/../common.sh" multigpu
: "${TO:=90}" "${RATE:=200}" "${STEPS:=100}"
unset CUDA_VISIBLE_DEVICES
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 # always: NVLink multicast stays off on these machines

device
T "$C" topo -o json >"$OUT/topo.json" || { echo "carve topo failed"; exit 1; }
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$OUT/topo.json")
[ "$n" -ge 2 ] || { echo "this needs two GPUs; carve topo lists $n"; exit 1; }
nvidia-smi topo -m >"$OUT/nvidia-topo.txt" 2>&1

step "(a) discovery's GPU tests on each GPU alone"
for g in 0 1; do
	(cd "$ROOT/internal/discover" && CUDA_VISIBLE_DEVICES=$g CARVE_GPU_TESTS=1 T "$ROOT/bin/discover.test" -test.v -test.run GPU) \
		>"$OUT/gputest-discover-gpu$g.txt" 2>&1
	echo "GPU $g: exit $?, $(grep -c '^--- PASS' "$OUT/gputest-discover-gpu$g.txt") passed," \
		"$(grep -c '^--- SKIP' "$OUT/gputest-discover-gpu$g.txt") skipped, $(grep -c '^--- FAIL' "$OUT/gputest-discover-gpu$g.txt") failed" |
		tee -a "$OUT/summary-a.txt"
done

step "(b) two programs partitioned on both GPUs, outside MPS"
T nvcc -O2 -o "$W/probe" "$E/probe.cu" || exit 1
T "$C" run --no-mps -t 0-15 --device 0,1 -- "$W/probe" smid 30 >"$OUT/smid-a.jsonl" 2>"$OUT/smid-a.err" &
a=$!
T "$C" run --no-mps -t 16-31 --device 0,1 -- "$W/probe" smid 30 >"$OUT/smid-b.jsonl" 2>"$OUT/smid-b.err" &
wait $a $! # by pid: a bare wait also waits for the log's tee, which never ends
# the GPUs in the other order: its device 0 is GPU 1 of carve topo's list
CUDA_VISIBLE_DEVICES=1,0 T "$C" run --no-mps --device 0:t=32-39 --device 1:t=40-47 -- "$W/probe" smid 30 \
	>"$OUT/smid-c.jsonl" 2>"$OUT/smid-c.err"
T "$C" run --no-mps -t 0-7 --device 1 -- "$W/probe" smid 1 >"$OUT/smid-refused.jsonl" 2>"$OUT/smid-refused.err"
echo "a launch on GPU 0 of a partition on GPU 1 alone: exit $? (want 86)" | tee "$OUT/summary-b.txt"
cat "$OUT"/smid-*.err
python3 "$E/check.py" "$OUT/topo.json" "a=$OUT/smid-a.jsonl:0=0-15,1=0-15" "b=$OUT/smid-b.jsonl:0=16-31,1=16-31" \
	"reordered=$OUT/smid-c.jsonl:1=32-39,0=40-47" >"$OUT/smid-check.jsonl"
echo "partitions on both GPUs held: exit $? (0: every check passed)" | tee -a "$OUT/summary-b.txt"
cat "$OUT/smid-check.jsonl"

step "(c) DDP on both GPUs beside an LS on GPU 0: alone, plain, under carve"
LS=(python3 "$ROOT/experiments/ls.py" --rate "$RATE")
DDP=(python3 -m torch.distributed.run --standalone --nproc_per_node 2 "$E/ddp.py" --steps "$STEPS")
T "${LS[@]}" --seconds 12 --label "LS alone, plain" 2>"$OUT/ls-alone.err" | grep '^{' | tee "$OUT/ls-alone.json"
SLO=$(python3 -c 'import json,sys; print(round(2*json.load(open(sys.argv[1]))["p99_ms"], 3))' "$OUT/ls-alone.json" 2>/dev/null || echo 20)
echo "SLO: $SLO ms (2x the LS's p99 alone)"
T "${DDP[@]}" --label "DDP alone, plain" 2>"$OUT/ddp-alone.err" | grep -o '{"label.*}' | tee "$OUT/ddp-alone.json"
# together NAME LS_PREFIX DDP_PREFIX: the LS serves while the job's timed
# steps run (from its ready file to its done file, made also if it fails)
together() {
	rm -f "$W/ready" "$W/done"
	(T $3 "${DDP[@]}" --ready-file "$W/ready" --done-file "$W/done" --label "DDP beside LS, $1" 2>"$OUT/ddp-$1.err" |
		grep -o '{"label.*}' >"$OUT/ddp-$1.json"; touch "$W/done") &
	local ddp=$! watch=""
	[ -n "$2" ] && (while [ ! -e "$W/ready" ] && [ ! -e "$W/done" ]; do sleep 0.2; done
		[ -e "$W/ready" ] && { "$C" ls; "$C" ls -o json; } >"$OUT/carve-ls-$1.txt" 2>&1) &
	[ -n "$2" ] && watch=$!
	T $2 "${LS[@]}" --seconds 90 --slo-ms "$SLO" --wait-file "$W/ready" --done-file "$W/done" --label "LS beside DDP, $1" \
		2>"$OUT/ls-$1.err" | grep '^{' >"$OUT/ls-$1.json"
	wait $ddp $watch
	cat "$OUT/ls-$1.json" "$OUT/ddp-$1.json"
}
together plain "" ""
"$C" mps start
together carve "$C run -q --ls -n 16 --device 0 --" "$C run -q --be --device 0,1 --"
if ! grep -q step_ms "$OUT/ddp-carve.json"; then
	echo "the DDP job failed under carve's MPS (see ddp-carve.err); again with NCCL_P2P_DISABLE=1"
	export NCCL_P2P_DISABLE=1
	together carve-nop2p "$C run -q --ls -n 16 --device 0 --" "$C run -q --be --device 0,1 --"
	unset NCCL_P2P_DISABLE
fi
"$C" mps stop

step "(d) one MPS control daemon for both GPUs"
"$C" mps start
for g in 0 1; do
	T "$C" run -q -n 50% --device "$g" -- "$W/probe" spin "$g" 3000 | tee -a "$OUT/mps-alone.jsonl"
done
pids=()
for g in 0 0 1; do # two clients in disjoint halves of GPU 0, one on GPU 1, at once
	T "$C" run -q -n 50% --device "$g" -- "$W/probe" spin "$g" 3000 >>"$OUT/mps-together.jsonl" &
	pids+=($!)
done
sleep 0.5 # placed first: a --share client takes free TPCs before busy ones, and would split GPU 0's halves
T "$C" run -q --share -n 8 --device 0,1 -- "$W/probe" smid 5 >"$OUT/mps-both.jsonl" 2>&1 & # one client on both
pids+=($!)
sleep 1
"$C" mps status >"$OUT/mps-status.txt" 2>&1
nvidia-smi --query-compute-apps=pid,process_name,gpu_uuid,used_memory --format=csv >>"$OUT/mps-status.txt" 2>&1
wait "${pids[@]}"
"$C" mps stop
cat "$OUT/mps-status.txt" "$OUT/mps-together.jsonl" "$OUT/mps-both.jsonl"

step summary
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return [json.loads(l) for l in open(os.path.join(out, name)) if l.startswith("{")]
    except OSError:
        return []
print(open(os.path.join(out, "summary-a.txt")).read().strip())
print(open(os.path.join(out, "summary-b.txt")).read().strip())
for r in load("smid-check.jsonl"):
    print("  %-9s GPU %s TPCs %-6s: %s SMs reported (partition %s), %s used, outside %s: %s" % (
        r.get("label"), r.get("gpu"), r.get("tpcs"), r.get("sms_reported"), r.get("partition_sms"), r.get("sms_used"),
        r.get("outside"), "ok" if r.get("ok") else "FAILED " + r.get("error", "")))
alone_ls, alone_ddp = load("ls-alone.json"), load("ddp-alone.json")
print("LS alone: p99 %s ms; DDP alone: %s ms a step" % (alone_ls[0]["p99_ms"] if alone_ls else "?",
      alone_ddp[0]["step_ms_mean"] if alone_ddp else "?"))
for setup in ("plain", "carve", "carve-nop2p"):
    ls, ddp = load("ls-%s.json" % setup), load("ddp-%s.json" % setup)
    if not ls and not ddp:
        continue
    l = ls[0] if ls else {}
    d = ddp[0] if ddp else {}
    print("%-11s LS p99 %s ms, SLO attainment %s (%s served, %s failed); DDP %s ms a step, %s img/s" % (
        setup, l.get("p99_ms"), l.get("slo_attainment"), l.get("served"), l.get("failed"), d.get("step_ms_mean", "FAILED"),
        d.get("img_per_s")))
alone, together = load("mps-alone.jsonl"), load("mps-together.jsonl")
for r in alone:
    print("MPS, alone on GPU %s (half its TPCs): %s ms a launch" % (r["uuid"][:12], r["ms_per_launch"]))
for r in together:
    print("MPS, 2 on GPU 0 and 1 on GPU 1 at once, each half: %s %s ms a launch" % (r["uuid"][:12], r["ms_per_launch"]))
both = load("mps-both.jsonl")
print("MPS, one client on both GPUs: %s" % ", ".join("device %s reports %s SMs" % (r.get("device"), r.get("sms_reported")) for r in both)
      or "FAILED")
PY
step done
