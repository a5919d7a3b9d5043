"""Reads a bandwidth study's results (run.sh OUT) and prints its tables as
markdown: the stream's bandwidth per TPC count, the victim's slowdowns,
and for each kernel (carve's and PyTorch's) its DRAM traffic by Nsight
Compute beside its time on 16, 33 and 66 TPCs, with what the scaling
estimator would say of it. Usage: analyze.py OUT"""
import csv, json, re, statistics, sys

out = sys.argv[1]


def ncu(path):
    """kernel name -> (bytes per launch, ns per launch), medians"""
    per = {}
    with open(path) as f:
        rows = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(rows):
        k = per.setdefault(r["Kernel Name"], {}).setdefault(r["ID"], {})
        k[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
    res = {}
    for name, launches in per.items():
        b = [l.get("dram__bytes_read.sum", 0) + l.get("dram__bytes_write.sum", 0) for l in launches.values()]
        t = [l["gpu__time_duration.sum"] for l in launches.values()]
        res[name] = (statistics.median(b), statistics.median(t), len(t))
    return res


def short(n):
    n = re.sub(r"\(.*", "", n)
    n = re.sub(r"<.*", "", n)
    return n.split("::")[-1][:48]


print("## Stream bandwidth against TPCs\n\n| TPCs | GB/s | GB/s a TPC |\n|---|---|---|")
for l in open(f"{out}/stream.jsonl"):
    d = json.loads(l)
    print(f"| {d['tpcs']} | {d['r']['gbps']:.0f} | {d['r']['gbps'] / d['tpcs']:.0f} |")

print("\n## carve's kernels: time on TPCs and DRAM traffic (Nsight Compute, whole GPU)\n")
times = {}
for l in open(f"{out}/kernels.jsonl"):
    d = json.loads(l)
    for k in d["r"]["kernels"]:
        times.setdefault(k["name"], {})[d["tpcs"]] = k["median_ms"]
truth = ncu(f"{out}/kernels-ncu.csv")
order = ["copy", "fma4", "fma16", "fma64", "fma256", "gather"]
launches = []  # ncu's in launch order: 23 each
ids = {}
with open(f"{out}/kernels-ncu.csv") as f:
    rows = [l for l in f if l.startswith('"')]
for r in csv.DictReader(rows):
    ids.setdefault(int(r["ID"]), {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
print("| kernel | ms on 8 | 16 | 33 | 66 | t66/t33 | DRAM GB/s (ncu) | share of 2.8 TB/s |\n|---|---|---|---|---|---|---|---|")
for i, name in enumerate(order):
    ls = [ids[j] for j in range(i * 23 + 3, (i + 1) * 23) if j in ids]
    gbs = statistics.median((l["dram__bytes_read.sum"] + l["dram__bytes_write.sum"]) / l["gpu__time_duration.sum"] for l in ls)
    t = times[name]
    print(f"| {name} | {t[8]:.3f} | {t[16]:.3f} | {t[33]:.3f} | {t[66]:.3f} | {t[66] / t[33]:.2f} | {gbs:.0f} | {gbs / 2800:.0%} |")

def base(n):
    """a kernel's family: its function's name without namespaces, template
    arguments or parameters (Nsight Compute and torch.profiler spell the
    rest differently)"""
    n = re.sub(r"^void ", "", n)
    n = n.split("<")[0].split("(")[0]
    return n.split("::")[-1]


for model in ["resnet", "vit"]:
    prof = {}  # family -> TPCs -> [us, count]
    for l in open(f"{out}/torchk.jsonl"):
        d = json.loads(l)
        if d["model"] == model:
            for n, k in d["kernels"].items():
                a = prof.setdefault(base(n), {}).setdefault(int(d["tag"][1:]), [0.0, 0])
                a[0] += k["us"]
                a[1] += k["count"]
    fam = {}  # family -> [bytes, ns, launches]
    for n, (b, t, c) in ncu(f"{out}/torchk-ncu-{model}.csv").items():
        a = fam.setdefault(base(n), [0.0, 0.0, 0])
        a[0] += b * c
        a[1] += t * c
        a[2] += c
    rows = []
    for f, (b, t, c) in fam.items():
        p = prof.get(f)
        if not p or not all(k in p for k in (16, 33, 66)):
            continue
        us = {k: p[k][0] / p[k][1] for k in p}
        rows.append((f, b / t, t / c, c, us))
    rows.sort(key=lambda r: -r[2] * r[3])
    print(f"\n## {model}: kernel families Nsight Compute measured (a window of 150 launches), by their time there\n")
    print("| family | launches | us (ncu) | DRAM GB/s | share of 2.8 TB/s | us on 16 TPCs | 33 | 66 | t66/t33 |\n|---|---|---|---|---|---|---|---|---|")
    for f, gbs, t, c, us in rows:
        print(f"| {f[:52]} | {c} | {t / 1e3:.1f} | {gbs:.0f} | {gbs / 2800:.0%} | {us[16]:.1f} | {us[33]:.1f} | {us[66]:.1f} | {us[66] / us[33]:.2f} |")
    heavy = [r for r in rows if r[1] > 0.5 * 2800]
    light = [r for r in rows if r[1] <= 0.5 * 2800]

    def ratio(r):
        return r[4][66] / r[4][33]
    med = lambda rs: statistics.median([ratio(r) for r in rs]) if rs else float("nan")
    print(f"\n{model}: {len(rows)} families matched; memory-heavy (over half of peak by ncu): {len(heavy)}, "
          f"t66/t33 median {med(heavy):.2f}; the rest: {len(light)}, t66/t33 median {med(light):.2f}")
    for cut in (0.6, 0.7, 0.8):
        tp = sum(1 for r in heavy if ratio(r) >= cut)
        fp = sum(1 for r in light if ratio(r) >= cut)
        print(f"- t66/t33 >= {cut}: {tp} of {len(heavy)} heavy families flagged, {fp} of {len(light)} others flagged wrongly")
