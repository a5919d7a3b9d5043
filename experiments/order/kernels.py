"""Sums up what experiments/order/kernels.sh recorded: for each process's
records (DIR/PID.tsv, in DIR/files.txt's order of creation), its kernels
by name, grid and block, with how many ran and their median time, the
kernels of longest total time first (at most TOP). Writes
DIR/summary-PID.tsv for each and prints one line a process.
Usage: kernels.py DIR [TOP]"""
import collections, os, statistics, sys

d = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 80
order = [l.split()[-1] for l in open(os.path.join(d, "files.txt")) if l.strip().endswith(".tsv")]
for f in order:
    runs = collections.defaultdict(list)
    for line in open(os.path.join(d, f)):
        if line.startswith("#"):
            continue
        p = line.rstrip("\n").split("\t")
        if len(p) < 12:
            continue
        runs[(p[11], p[2], p[3])].append(int(p[1]) - int(p[0]))
    rows = sorted(runs.items(), key=lambda kv: -sum(kv[1]))
    pid = f[:-4]
    with open(os.path.join(d, "summary-%s.tsv" % pid), "w") as out:
        out.write("count\tmedian_us\ttotal_ms\tgrid\tblock\tname\n")
        for (name, grid, block), t in rows[:top]:
            out.write("%d\t%.2f\t%.2f\t%s\t%s\t%s\n" % (len(t), statistics.median(t) / 1e3, sum(t) / 1e6, grid, block, name[:160]))
    n = sum(len(t) for t in runs.values())
    print("%s\t%d kernels\t%d kinds\t%s" % (pid, n, len(runs), rows[0][0][0][:60] if rows else "-"))
