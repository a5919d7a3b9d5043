"""densenet161 inference at batch 64 (fp16, random weights, cudnn.benchmark
on), as carve bench serve's BE runs it: warms up where it starts, prints
"warm", waits for a line on stdin (the partition may be changed meanwhile,
with carve set), then runs a few steps, each synchronized and timed, to see
whether its kernels can all run on the TPCs it has then. With --kernels,
prints how often each kernel of one step ran (torch.profiler; run it
outside carve)."""
import argparse, json, sys, time
import torch, torchvision

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=4)
ap.add_argument("--label", default="")
ap.add_argument("--kernels", action="store_true")
ap.add_argument("--trace", help="with --kernels: also write one step's kernels in order, with grid and block, as JSON lines")
a = ap.parse_args()
torch.backends.cudnn.benchmark = True
m = torchvision.models.densenet161(weights=None).eval().cuda().half()
x = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.half)
with torch.no_grad():
    for _ in range(3):
        m(x)
    torch.cuda.synchronize()
    if a.kernels:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as p:
            m(x)
            torch.cuda.synchronize()
        names = {}
        for e in p.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                names[e.name] = names.get(e.name, 0) + 1
        for n, c in sorted(names.items()):
            print(json.dumps({"kernel": n[:300], "count": c}))
        if a.trace:
            import os, tempfile
            tmp = tempfile.mktemp(suffix=".json")
            p.export_chrome_trace(tmp)
            ev = [e for e in json.load(open(tmp))["traceEvents"] if e.get("cat") == "kernel"]
            os.remove(tmp)
            with open(a.trace, "w") as f:
                for i, e in enumerate(sorted(ev, key=lambda e: e["ts"])):
                    g = e.get("args", {})
                    f.write(json.dumps({"i": i + 1, "kernel": e["name"][:200], "us": e.get("dur"), "grid": g.get("grid"), "block": g.get("block"),
                                        "blocks_per_sm": g.get("blocks per SM"), "smem": g.get("shared memory"), "regs": g.get("registers per thread")}) + "\n")
        sys.exit(0)
    print("warm", flush=True)
    sys.stdin.readline()
    for i in range(a.steps):
        t = time.perf_counter()
        m(x)
        torch.cuda.synchronize()
        print(json.dumps({"label": a.label, "step": i, "ms": round((time.perf_counter() - t) * 1000, 2)}), flush=True)
