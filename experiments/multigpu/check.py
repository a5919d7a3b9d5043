"""Checks what probe smid saw under carve run against the partitions asked
for: every SM a device's kernels ran on is one of its partition's, named on
that GPU's own topology (carve topo -o json), and the device reports the
partition's SM count.
  check.py TOPO.json LABEL=PROBE.jsonl:GPU=TPCS[,GPU=TPCS...] ...
GPU is the index of the GPU in TOPO.json (the order carve topo lists them
in), TPCS its logical TPCs ("0-15"). Prints one JSON line a device, and
exits 1 if any check failed."""
import json, sys


def tpcs(spec):
    out = []
    for part in spec.split("+"):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


topos = json.load(open(sys.argv[1]))
bad = 0
for arg in sys.argv[2:]:
    label, _, rest = arg.partition("=")
    path, _, parts = rest.partition(":")
    want = {}
    for p in parts.split(","):
        gpu, _, spec = p.partition("=")
        t = topos[int(gpu)]
        want[t["uuid"]] = (int(gpu), spec, {sm for i in tpcs(spec) for sm in t["tpcs"][i]["sms"]})
    seen = set()
    for line in open(path):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "error" in r:
            print(json.dumps({"label": label, "error": r["error"]}))
            bad += 1
            continue
        if r["uuid"] not in want:
            continue
        gpu, spec, sms = want[r["uuid"]]
        seen.add(r["uuid"])
        got = set(r["smids"])
        ok = got <= sms and r["sms_reported"] == len(sms)
        bad += not ok
        print(json.dumps({"label": label, "device": r["device"], "gpu": gpu, "uuid": r["uuid"], "tpcs": spec,
                          "partition_sms": len(sms), "sms_reported": r["sms_reported"], "sms_used": len(got),
                          "outside": sorted(got - sms), "ok": ok}))
    for u in set(want) - seen:
        print(json.dumps({"label": label, "uuid": u, "error": "no kernel ran on this GPU"}))
        bad += 1
sys.exit(1 if bad else 0)
