"""Which part of an LS service's start, made beside a running BE, makes it
serve slower? One BE (vit_b_16 fp16 batch 64 inference in a loop, under
carve run --be) runs throughout; LS processes (efficientnet_b0 fp16 batch 1
from a CUDA graph, under carve run --ls -n 16) are started one after
another, each under a condition: the BE stopped (SIGSTOP) or running while
the LS builds and warms up its model (cuDNN's benchmark mode on or off) and
while it captures its graph. Each LS then replays its graph, timed one
replay at a time, with the BE stopped ("alone") and running ("beside"), and
serves Poisson requests at --rate beside the running BE; its graph's
kernels are dumped (cudaGraphDebugDotPrint) to compare with the others'.

Usage: python3 cause.py --carve bin/carve --out DIR [--rounds 2 --rate 750]
(carve's MPS started; prints one JSON line per LS and a table).
Run as "cause.py ls ..." it is one LS process, driven by lines on stdin.
"""
import argparse, json, os, re, signal, statistics, subprocess, sys, time

def ls_main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--benchmark", type=int, default=1)
    p.add_argument("--prio", action="store_true", help="replay on a stream of the greatest priority")
    a = p.parse_args(argv)
    import torch, torchvision
    torch.backends.cudnn.benchmark = bool(a.benchmark)
    say = lambda *x: print(*x, flush=True)
    torch.zeros(1, device="cuda")
    say("ctx", torch.cuda.get_device_properties(0).multi_processor_count)
    g = m = x = None
    rs = torch.cuda.Stream(priority=-100) if a.prio else torch.cuda.current_stream()  # -100: the greatest there is
    torch.cuda.set_stream(rs)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "build":
            with torch.no_grad():
                m = torchvision.models.efficientnet_b0(weights=None).eval().cuda().half()
                x = torch.randn(1, 3, 224, 224, device="cuda", dtype=torch.half)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(10):
                        m(x)
                torch.cuda.current_stream().wait_stream(s)
                torch.cuda.synchronize()
            say("built")
        elif cmd[0] == "capture":
            g = torch.cuda.CUDAGraph()
            g.enable_debug_mode()
            with torch.no_grad(), torch.cuda.graph(g):
                m(x)
            for _ in range(20):
                g.replay()
            torch.cuda.synchronize()
            say("captured")
        elif cmd[0] == "dump":
            g.debug_dump(cmd[1])
            say("dumped")
        elif cmd[0] == "time":  # n replays, each timed to its end
            n, ts = int(cmd[1]), []
            for _ in range(n):
                t0 = time.perf_counter()
                g.replay()
                torch.cuda.current_stream().synchronize()
                ts.append((time.perf_counter() - t0) * 1e3)
            say(json.dumps(ts))
        elif cmd[0] == "serve":  # Poisson at rate for seconds; latency from arrival
            import random
            rate, dur = float(cmd[1]), float(cmd[2])
            rng, arr, t = random.Random(1), [], 0.0
            while True:
                t += rng.expovariate(rate)
                if t >= dur:
                    break
                arr.append(t)
            lat, t0 = [], time.perf_counter()
            for at in arr:
                w = at - (time.perf_counter() - t0)
                if w > 3e-4:
                    time.sleep(w - 2e-4)
                while time.perf_counter() - t0 < at:
                    pass
                g.replay()
                torch.cuda.current_stream().synchronize()
                lat.append((time.perf_counter() - t0 - at) * 1e3)
            say(json.dumps(lat))
        elif cmd[0] == "quit":
            say("bye")
            return


def q(xs, f):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(f * len(xs)))]


def kernels(dot):
    """The kernel nodes of a graph's DOT dump, each its label with addresses
    left out (name, grid, block and the rest), and their counts."""
    out = {}
    try:
        text = open(dot, errors="replace").read()
    except OSError:
        return out
    for label in re.findall(r'label="(\{?KERNEL.*?)"\]', text, re.S):
        k = re.sub(r"0x[0-9a-fA-F]+", "", label)
        out[k] = out.get(k, 0) + 1
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--carve", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--rate", type=float, default=750)
    p.add_argument("--serve", type=float, default=3)
    p.add_argument("--conds", default="", help="the conditions to run, comma-separated (default: all)")
    p.add_argument("--be-args", default="", help="more carve run flags of the BE, space-separated (e.g. --epoch=1s)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    be = subprocess.Popen([a.carve, "run", "--be", "--inflight=8", "--queue=300us", "--be-share=0.05"] + a.be_args.split() + ["--",
                           sys.executable, "-c", BE], stdout=open(os.path.join(a.out, "be.txt"), "w"), stderr=subprocess.STDOUT)
    time.sleep(25)  # its model built and warmed up (it prints its rate every 2 s)
    stop = lambda: (os.kill(be.pid, signal.SIGSTOP), time.sleep(0.3))
    cont = lambda: (os.kill(be.pid, signal.SIGCONT), time.sleep(0.3))
    # name: cuDNN benchmark mode, BE running while building, while capturing,
    # while the LS starts (its CUDA context made: the BE first throughout)
    conds = [("first", 1, 0, 0, 0), ("beside", 1, 1, 1, 0), ("build-beside", 1, 1, 0, 0), ("capture-beside", 1, 0, 1, 0),
             ("first-nobench", 0, 0, 0, 0), ("beside-nobench", 0, 1, 1, 0), ("ctx-beside", 1, 1, 1, 1)]
    if a.conds:
        conds = [c for c in conds if c[0] in a.conds.split(",")]
    rows = []
    for r in range(a.rounds):
        for name, bench, b_build, b_cap, b_ctx in conds:
            (cont if b_ctx else stop)()
            ls = subprocess.Popen([a.carve, "run", "--ls", "-n", "16", "--", sys.executable, os.path.realpath(__file__), "ls",
                                   "--benchmark", str(bench)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(a.out, f"ls-{name}-{r}.err"), "w"), text=True)

            def ask(cmd):
                ls.stdin.write(cmd + "\n")
                ls.stdin.flush()
                return ls.stdout.readline().strip()

            sms = ls.stdout.readline().split()[-1:]
            (cont if b_build else stop)()
            t0 = time.time()
            built = ask("build")
            tb = time.time() - t0
            (cont if b_cap else stop)()
            cap = ask("capture")
            dot = os.path.join(a.out, f"graph-{name}-{r}.dot")
            ask("dump " + dot)
            stop()
            alone = json.loads(ask("time 1000"))
            cont()
            beside = json.loads(ask("time 1000"))
            served = json.loads(ask(f"serve {a.rate} {a.serve}"))
            ask("quit")
            ls.wait(timeout=60)
            row = {"cond": name, "round": r, "be_args": a.be_args, "benchmark": bench, "be_build": b_build, "be_capture": b_cap, "be_ctx": b_ctx, "sms": sms,
                   "build_s": round(tb, 2), "ok": [built, cap], "kernels": kernels(dot),
                   "alone_p50": statistics.median(alone), "alone_p90": q(alone, .9),
                   "beside_p50": statistics.median(beside), "beside_p99": q(beside, .99),
                   "serve_p50": statistics.median(served), "serve_p99": q(served, .99)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    be.send_signal(signal.SIGCONT)
    be.terminate()
    be.wait(timeout=30)
    ref = {}
    print("\ncond round | replay alone p50/p90 ms | replay beside BE p50/p99 | serve %g/s beside BE p50/p99 | kernels, differing from 'first' of the round" % a.rate)
    for row in rows:
        if row["cond"] == "first":
            ref = row["kernels"]
        k = row["kernels"]
        diff = sum(abs(k.get(n, 0) - ref.get(n, 0)) for n in set(k) | set(ref))
        print("%-15s %d | %.3f %.3f | %.3f %.3f | %.2f %.2f | %d, %d" % (row["cond"], row["round"], row["alone_p50"], row["alone_p90"],
              row["beside_p50"], row["beside_p99"], row["serve_p50"], row["serve_p99"], sum(k.values()), diff))


BE = """
import sys, time, torch, torchvision
torch.backends.cudnn.benchmark = True
m = torchvision.models.vit_b_16(weights=None).eval().cuda().half()
x = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.half)
n, t0 = 0, time.perf_counter()
with torch.no_grad():
    while True:
        m(x)
        torch.cuda.synchronize()
        n += 64
        if time.perf_counter() - t0 > 2:
            print("%.0f img/s" % (n / (time.perf_counter() - t0)), flush=True)
            n, t0 = 0, time.perf_counter()
"""

if __name__ == "__main__":
    if sys.argv[1:2] == ["ls"]:
        ls_main(sys.argv[2:])
    else:
        main()
