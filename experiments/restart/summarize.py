"""Summarizes a run of experiments/restart/run.sh in OUT (its first argument):
writes OUT/summary.json and prints it with the BE's seconds as a table.

Phases: "undisturbed" from when the LS began serving for PHASE s, then
"restarts" to the LS's end. The BE's seconds count where they lie wholly in
a phase; a second is marked "restart" where it overlaps a restart (from
SIGTERM to the new daemon serving). The LS's requests count by arrival.
"spread" is the undisturbed phase's: the least and most images of its
seconds, and the least and most p99 of its 5-s windows; "within_spread"
says whether every second and every 5-s window of the restarts phase lies
within it (the BE no slower, the LS's p99 no higher). Errors: a tenant's
exit status other than 0, its CUDA or Python errors, an LS request that
failed, a GPU fault in carve ls, a restart whose daemon did not exit, did
not serve or did not adopt MPS, and MPS's pids changed."""
import json, os, re, statistics, sys

out = sys.argv[1]
ev = [json.loads(l) for l in open(os.path.join(out, "events.jsonl")) if l.strip()]
serve = next(e for e in ev if e["event"] == "serve")
t0, phase = serve["t"], serve["phase"]
restarts = [e for e in ev if e["event"] == "restart"]
tenants = {e["name"]: e for e in ev if e["event"] == "tenant"}
mps = {e["when"]: e for e in ev if e["event"] == "mps"}
end = tenants.get("ls", {}).get("t", t0 + 2 * phase)
phases = {"undisturbed": (t0, t0 + phase), "restarts": (t0 + phase, min(end, t0 + 2 * phase))}


def lines(name):
    p = os.path.join(out, name)
    return open(p, errors="replace").read().splitlines() if os.path.exists(p) else []


def records(name):
    out = []
    for l in lines(name):
        if l.startswith("{"):
            try:
                out.append(json.loads(l))
            except ValueError:
                pass
    return out


def q(v, p):
    v = sorted(v)
    return round(v[min(len(v) - 1, int(p * len(v)))], 3) if v else None


be = [r for r in records("be.out") if "images" in r and not r.get("partial")]
seconds = []
for r in be:
    a, b = r["t"], r["t"] + 1
    ph = next((k for k, (lo, hi) in phases.items() if lo <= a and b <= hi), None)
    hit = any(a < e["ready"] and e["term"] < b for e in restarts)
    seconds.append({"s": round(a - t0), "images": r["images"], "phase": ph, "restart": hit})

trace = records("ls-trace.jsonl")
summary = {"phases": {}, "restarts": [], "errors": []}
for name, (lo, hi) in phases.items():
    imgs = [s["images"] for s in seconds if s["phase"] == name]
    lat = [r["ms"] for r in trace if lo <= r["t"] < hi]
    windows = []
    w = lo
    while w + 5 <= hi + 1e-6:
        v = [r["ms"] for r in trace if w <= r["t"] < w + 5]
        if v:
            windows.append(q(v, 0.99))
        w += 5
    summary["phases"][name] = {
        "be_images_per_s": {"mean": round(statistics.mean(imgs)) if imgs else None, "min": min(imgs, default=None),
                            "max": max(imgs, default=None), "seconds": len(imgs)},
        "ls": {"requests": len(lat), "p50_ms": q(lat, 0.5), "p99_ms": q(lat, 0.99), "p99_ms_5s_windows": windows}}
u, r = summary["phases"]["undisturbed"], summary["phases"]["restarts"]
summary["spread"] = {"be_images_per_s": [u["be_images_per_s"]["min"], u["be_images_per_s"]["max"]],
                     "ls_p99_ms_5s": [min(u["ls"]["p99_ms_5s_windows"], default=None), max(u["ls"]["p99_ms_5s_windows"], default=None)]}
rs = [s["images"] for s in seconds if s["phase"] == "restarts"]
summary["within_spread"] = {
    "be": bool(rs) and u["be_images_per_s"]["min"] is not None and min(rs) >= u["be_images_per_s"]["min"],
    "ls_p99": bool(r["ls"]["p99_ms_5s_windows"]) and summary["spread"]["ls_p99_ms_5s"][1] is not None
    and max(r["ls"]["p99_ms_5s_windows"]) <= summary["spread"]["ls_p99_ms_5s"][1]}
summary["be_seconds"] = seconds

for e in restarts:
    summary["restarts"].append({"i": e["i"], "at_s": round(e["term"] - t0, 2), "exit_s": round(e["exited"] - e["term"], 3),
                                "down_s": round(e["ready"] - e["term"], 3), "rc": e["rc"], "serving": e["serving"], "adopted": e["adopted"]})
    if e["rc"] != 0 or not e["serving"] or not e["adopted"]:
        summary["errors"].append(f"restart {e['i']}: exit status {e['rc']}, serving {e['serving']}, MPS adopted {e['adopted']}")
if len(restarts) == 0:
    summary["errors"].append("no restart happened")

cuda = re.compile(r"CUDA error|CUDA_ERROR|cudaError|Traceback|RuntimeError|the GPU context's work has ended|\"error\"")
for name in ("ls", "be"):
    t = tenants.get(name)
    if t is None or t["rc"] != 0:
        summary["errors"].append(f"{name}: exit status {t and t['rc']}")
    for l in lines(name + ".out"):
        if cuda.search(l):
            summary["errors"].append(f"{name}: {l[:200]}")
ls_result = next((x for x in records("ls.out") if "p99_ms" in x), None)
summary["ls_result"] = ls_result
if ls_result is None or ls_result.get("failed"):
    summary["errors"].append(f"ls: result {ls_result}")
try:
    faults = [row for row in json.load(open(os.path.join(out, "ls-after.json"))) if row.get("fault")]
except (OSError, ValueError) as e:
    faults = [f"carve ls -o json unreadable: {e}"]
summary["errors"] += [f"GPU fault: {f}" for f in faults]
summary["mps"] = mps
b, a = mps.get("before", {}), mps.get("after", {})
if not b.get("control") or b.get("control") != a.get("control") or not b.get("servers") or b.get("servers") != a.get("servers"):
    summary["errors"].append(f"MPS before the restarts {b}, after {a}: want the same control daemon and server")

json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print("BE images per second (s from the LS's start; R: a restart in it):")
print(" ".join(f"{s['s']}:{s['images']}{'R' if s['restart'] else ''}" for s in seconds))
print(json.dumps({k: v for k, v in summary.items() if k != "be_seconds"}, indent=1))
print("errors: none" if not summary["errors"] else f"errors: {len(summary['errors'])}")
