"""Does which process came first decide how fast the LS serves, with no BE
work beside it? Fresh processes each round, under carve's MPS: an LS
(cause.py's: efficientnet_b0 fp16 batch 1 from a CUDA graph, cuDNN's
benchmark mode off, under carve run --ls -n 16) and a BE (vit_b_16 fp16
batch 64, under carve run --be --be-share 0.05) that builds and warms up
its model, then waits, idle, until told to run. Conditions:
  no-mps       the LS alone, neither under MPS nor carve: the reference
  ls-only      the LS alone (no BE process)
  ls-then-be   the LS ready (its graph captured) before the BE starts
  be-then-ls   the BE ready, idle, before the LS starts
A condition with "+tail" has an idle client of carve's MPS connect after
its LS and BE are ready and stay; with "+tail-gone", connect, then exit
before the LS is measured (is the newest client the slow one?); with
"+touch", carve mps touch runs then (carve run starts one after each
tenant's first launch too).
Each LS replays its graph --n times one at a time with the BE idle
("idle") and serves Poisson requests at --rate beside the idle BE, then
replays and serves again with the BE running ("beside"); "within" is the
share of requests within twice the round's no-mps p99 at that rate. --plain runs both as plain clients of
carve's MPS (no carve run: no masks, no tide); --be-env adds VAR=VALUE
pairs to the BE's environment (e.g. CUDA_MPS_CLIENT_PRIORITY=1);
--ls-prio replays the LS's graph on a stream of the greatest priority;
--conds picks conditions; --placeholder connects an idle client of
carve's MPS before each condition's processes. Usage:
python3 ctx.py --carve bin/carve --out DIR [--rounds 3 --rate 810 --plain]
(carve's MPS started in CARVE_MPS_DIR): a JSON line a condition and a
table.
"""
import argparse, json, os, statistics, subprocess, sys, time

from cause import q  # the quantile cause.py's table uses

HERE = os.path.dirname(os.path.realpath(__file__))

BE = """
import sys, time, torch, torchvision
m = torchvision.models.vit_b_16(weights=None).eval().cuda().half()
x = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.half)
with torch.no_grad():
    for _ in range(5):
        m(x)
    torch.cuda.synchronize()
    print("ready", flush=True)
    sys.stdin.readline()
    while True:
        m(x)
        torch.cuda.synchronize()
"""

PLACEHOLDER = """
import sys, torch
torch.zeros(1, device="cuda")
print("ready", flush=True)
sys.stdin.readline()
"""


class Proc:
    def __init__(self, argv, err, env=None):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(err, "w"), text=True, env=env)

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def line(self):
        return self.p.stdout.readline().strip()

    def end(self):
        self.p.kill()
        self.p.wait(timeout=30)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--carve", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rate", type=float, default=810)
    p.add_argument("--serve", type=float, default=4)
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--plain", action="store_true")
    p.add_argument("--ls-prio", action="store_true", help="the LS replays on a stream of the greatest priority")
    p.add_argument("--conds", default="no-mps,ls-only,ls-then-be,be-then-ls")
    p.add_argument("--placeholder", action="store_true", help="a client of carve's MPS that holds a context and idles, connected before each condition's")
    p.add_argument("--be-env", default="", help="VAR=VALUE pairs, space-separated, for the BE's environment")
    a = p.parse_args()
    mps = os.environ["CARVE_MPS_DIR"]
    plain_env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=os.path.join(mps, "pipe"), CUDA_MPS_LOG_DIRECTORY=os.path.join(mps, "log"))
    be_env = dict(plain_env if a.plain else os.environ, **dict(kv.split("=", 1) for kv in a.be_env.split()))
    be_pre = [] if a.plain else [a.carve, "run", "--be", "--be-share=0.05", "--"]
    ls_pre = [] if a.plain else [a.carve, "run", "--ls", "-n", "16", "--"]
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for r in range(a.rounds):
        ref = None  # the round's no-mps p99 served
        for cond in a.conds.split(","):
            be = ls = ph = tail = None
            base, _, extra = cond.partition("+")

            def start_be():
                b = Proc(be_pre + [sys.executable, "-c", BE], os.path.join(a.out, f"be-{cond}-{r}.err"), be_env)
                ok = b.line()
                return b, ok

            def start_ls():
                pre, env = (ls_pre, plain_env if a.plain else None) if base != "no-mps" else ([], dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=os.path.join(mps, "none")))
                l = Proc(pre + [sys.executable, os.path.join(HERE, "cause.py"), "ls", "--benchmark", "0"] + ["--prio"] * a.ls_prio,
                         os.path.join(a.out, f"ls-{cond}-{r}.err"), env)
                l.line()  # its context
                return l, [l.ask("build"), l.ask("capture")]

            try:
                if a.placeholder and base != "no-mps":
                    ph = Proc([sys.executable, "-c", PLACEHOLDER], os.path.join(a.out, f"ph-{cond}-{r}.err"), plain_env)
                    ph.line()
                if base == "be-then-ls":
                    be, bok = start_be()
                    ls, lok = start_ls()
                else:
                    ls, lok = start_ls()
                    be, bok = start_be() if base == "ls-then-be" else (None, "")
                if extra in ("tail", "tail-gone"):
                    tail = Proc([sys.executable, "-c", PLACEHOLDER], os.path.join(a.out, f"tail-{cond}-{r}.err"), plain_env)
                    lok.append(tail.line())
                    if extra == "tail-gone":
                        tail.end()
                        tail = None
                        time.sleep(1)
                elif extra == "touch":  # carve's own: a context on each GPU, then gone
                    lok.append(subprocess.run([a.carve, "mps", "touch"], capture_output=True, text=True).stdout.strip())
                    time.sleep(1)
                elif extra:
                    sys.exit(f"ctx.py: condition {cond!r}: after '+' only tail, tail-gone or touch")
                idle = json.loads(ls.ask(f"time {a.n}"))
                row = {"cond": cond, "round": r, "plain": a.plain, "be_env": a.be_env, "ls_prio": a.ls_prio, "placeholder": a.placeholder, "ok": lok + [bok], "idle_p10": q(idle, .1), "idle_p50": statistics.median(idle), "idle_p90": q(idle, .9)}
                served = json.loads(ls.ask(f"serve {a.rate} {a.serve}"))
                if base == "no-mps":
                    ref = q(served, .99)
                within = lambda xs: sum(x <= 2 * ref for x in xs) / len(xs) if ref else 0
                row.update(idle_serve_p50=statistics.median(served), idle_serve_p99=q(served, .99), idle_within=within(served))
                if be:
                    be.p.stdin.write("run\n")
                    be.p.stdin.flush()
                    time.sleep(1)
                    beside = json.loads(ls.ask(f"time {a.n}"))
                    row.update(beside_p50=statistics.median(beside), beside_p99=q(beside, .99))
                    served = json.loads(ls.ask(f"serve {a.rate} {a.serve}"))
                    row.update(serve_p50=statistics.median(served), serve_p99=q(served, .99), within=within(served))
            finally:
                for x in (ls, be, ph, tail):
                    if x:
                        x.end()
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\ncond round | replay, BE idle p10/p50/p90 ms | serve %g/s, BE idle: p50/p99, within | replay beside BE p50/p99 | serve beside p50/p99, within" % a.rate)
    for w in rows:
        print("%-19s %d | %.3f %.3f %.3f | %.2f %.2f %.2f%% | %.3f %.3f | %.2f %.2f %.2f%%" % (w["cond"], w["round"], w["idle_p10"], w["idle_p50"], w["idle_p90"],
              w["idle_serve_p50"], w["idle_serve_p99"], 100 * w["idle_within"], w.get("beside_p50", 0), w.get("beside_p99", 0),
              w.get("serve_p50", 0), w.get("serve_p99", 0), 100 * w.get("within", 0)))


if __name__ == "__main__":
    main()
