#!/usr/bin/env python3
"""Host-backend speed benchmark behind docs/PERFORMANCE.md.

Runs whole launches several times (this machine's noise is per launch), and prints the median and
range over launches of: single-core memcpy bandwidth, 8 B AllReduce latency at 2 and 4 ranks,
64 MiB busbw of AllReduce, AllGather and ReduceScatter at 2 and 4 ranks, and the wall time of
the default sweep. Usage: python3 scripts/perf.py [--launches 5]
"""
import argparse, csv, os, platform, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "collbench")


def run(args, out):
    subprocess.run([BIN, "sweep", "--no-progress", "--out", out] + args, check=True,
                   stdout=subprocess.DEVNULL, cwd=ROOT)
    with open(os.path.join(out, "summary.csv")) as f:
        return list(csv.DictReader(f))


def memcpy():
    out = subprocess.run(["cargo", "run", "--release", "-q", "--example", "memcpy"],
                         check=True, capture_output=True, text=True, cwd=ROOT).stdout
    return float(out.strip().splitlines()[-1].split("=")[1])


def spread(xs):
    return f"{statistics.median(xs):9.2f}  [{min(xs):.2f} .. {max(xs):.2f}]"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=5)
    n = ap.parse_args().launches
    subprocess.run(["cargo", "build", "--release", "-q", "--examples", "--bins"], check=True, cwd=ROOT)
    res = {}
    def add(k, v):
        res.setdefault(k, []).append(v)
    tmp = tempfile.mkdtemp(prefix="collbench-perf-")
    for i in range(n):
        add("memcpy single core GB/s", memcpy())
        for r, algos in ((2, "ring"), (4, "ring,tree,recursive-doubling")):
            for row in run(["--op", "allreduce", "--algo", algos, "--ranks", str(r), "-b", "8", "-e", "8"],
                           os.path.join(tmp, f"lat{r}-{i}")):
                add(f"8 B allreduce {row['algo']} {r} ranks median us", float(row["time_us_median"]))
        for r in (2, 4):
            for row in run(["--ranks", str(r), "-b", "64M", "-e", "64M"], os.path.join(tmp, f"bw{r}-{i}")):
                add(f"64 MiB {row['op']} {r} ranks busbw GB/s", float(row["busbw_gbps"]))
        t = time.monotonic()
        run([], os.path.join(tmp, f"default-{i}"))
        add("default sweep wall s", time.monotonic() - t)
    print(f"# {platform.node()} {time.strftime('%Y-%m-%d')} cores={os.cpu_count()} launches={n}")
    print(f"# {'metric':44s} {'median':>9s}  [min .. max over launches]")
    for k, v in res.items():
        print(f"{k:46s} {spread(v)}")


if __name__ == "__main__":
    sys.exit(main())
