#!/usr/bin/env python3
"""The host backend against the MPI library on the same machine, side by side (docs/PERFORMANCE.md).

Builds collbench with `--features mpi`, then repeats whole launches (this machine's noise is per
launch), alternating the two backends over the same points: every op, f32, the smallest size
(8 B, or where the op splits the buffer one 16-byte block per rank, as nccl-tests cuts it),
1 MiB and 64 MiB, at 2 and 4 ranks. The host backend runs each op's algorithms (the best median over launches is compared),
the MPI backend the library's own choice (`--algo auto`). With `--osu DIR` (a build of the OSU
micro-benchmarks' c/mpi/collective/blocking), OSU's test of each op it has runs on the same
Open MPI at the same sizes, and its average latency is put beside the MPI backend's median
(busbw from it by the nccl-tests rules, OSU's size being S/p for AllGather, AllToAll, Gather
and Scatter). OSU's latency is another statistic than collbench's (each rank's mean time per
call, a barrier after each call, averaged over the ranks, where collbench takes the slowest
rank's median), so for the smallest size the same statistic is also taken from each backend's
ranks.csv (columns host~osu and mpi~osu): compare those with osu like for like. With `--mpi4py PYTHON` (a Python with mpi4py and numpy), scripts/mpi4py_bench.py
times AllGather, AllToAll, Gather, Scatter and SendRecv through mpi4py on the same Open MPI, by
collbench's protocol (barrier, slowest rank, median).

For the large size each launch also measures the copy bound: examples/memcpy.rs copying on
min(ranks, cores) cores at once gives each core's rate, and a call that must copy COPIED(p) x S
bytes in all over those cores cannot reach a busbw above cores x rate / COPIED(p) x the op's bus
factor (column `bound`; none for the reductions, whose arithmetic is not a copy).

Prints per op and world the median over launches of each backend's median time (small) and
busbw (large), and the ratio taken launch pair by launch pair, with its range; a ratio of 1 or
more means the host backend at least matches MPI.

Usage: python3 scripts/host_vs_mpi.py [--launches 5] [--ranks 2,4] [--mid 1M] [--large 64M]
                                     [--ops allgather,alltoall] [--classes small] [--osu DIR]
                                     [--mpi4py /usr/bin/python3]
"""
import argparse, csv, os, platform, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "collbench")
OPS = "allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv,gather,scatter"
HOST_ALGOS = "ring,tree,recursive-doubling,pairwise,bruck,direct,binomial,linear"
# OSU's test of each op, and whether its size is per rank (S = size x p).
OSU = {"allreduce": ("osu_allreduce", False), "allgather": ("osu_allgather", True),
       "reducescatter": ("osu_reduce_scatter", False), "broadcast": ("osu_bcast", False),
       "reduce": ("osu_reduce", False), "alltoall": ("osu_alltoall", True),
       "gather": ("osu_gather", True), "scatter": ("osu_scatter", True)}
MPI4PY_OPS = ("allgather", "alltoall", "gather", "scatter", "sendrecv")
# Bytes a call must copy in all, per byte of S, out of place, where every byte of a rank's
# output is one copy (no reduction): what the copy bound below divides among the cores.
COPIED = {"allgather": lambda p: p, "alltoall": lambda p: p, "sendrecv": lambda p: p,
          "broadcast": lambda p: p, "gather": lambda p: 1, "scatter": lambda p: 1}
BUS = {"allreduce": lambda p: 2 * (p - 1) / p, "broadcast": lambda p: 1.0,
       "reduce": lambda p: 1.0, "sendrecv": lambda p: 1.0}


def bus(op, ranks):
    """nccl-tests' bus factor of `op` at `ranks` ((p-1)/p unless BUS says otherwise)."""
    return BUS.get(op, lambda p: (p - 1) / p)(ranks)


def copiers(ranks):
    """How many ranks copy at the same time: one per core at most."""
    return min(ranks, os.cpu_count() or 1)


def mpirun(ranks):
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return ["mpirun", "-np", str(ranks), "--oversubscribe"] + root


def sweep(backend, ranks, sizes, out, ops):
    """One whole launch; the rows of its summary.csv, each with `osu_stat_us` added: OSU's own
    statistic from ranks.csv, the mean over ranks of each rank's mean time."""
    args = ["sweep", "--no-progress", "--out", out, "--op", ops, "--dtype", "f32"] + sizes
    if backend == "host":
        cmd = [BIN] + args + ["--ranks", str(ranks), "--algo", HOST_ALGOS]
    else:
        cmd = mpirun(ranks) + [BIN] + args + ["--backend", "mpi", "--algo", "auto"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr.strip()}")
    with open(os.path.join(out, "summary.csv")) as f:
        rows = list(csv.DictReader(f))
    means = rank_means(out)
    for r in rows:
        r["osu_stat_us"] = statistics.mean(means[(r["op"], r["algo"], r["bytes"])])
    return rows


def rank_means(out):
    """{(op, algo, bytes): [each rank's mean time, us]} from a run's ranks.csv."""
    found = {}
    with open(os.path.join(out, "ranks.csv")) as f:
        for r in csv.DictReader(f):
            found.setdefault((r["op"], r["algo"], r["bytes"]), []).append(float(r["time_us_mean"]))
    return found


def smallest(rows, metric):
    """Per op, the rows of its smallest size: {op: (bytes, {algo: value})}."""
    found = {}
    for r in rows:
        size = int(r["bytes"])
        if r["op"] not in found or size < found[r["op"]][0]:
            found[r["op"]] = (size, {})
        if size == found[r["op"]][0]:
            found[r["op"]][1][r["algo"]] = float(r[metric])
    return found


def spread(xs):
    return f"{statistics.median(xs):8.2f} [{min(xs):.2f}..{max(xs):.2f}]"


def osu(args, op, ranks, size, metric):
    """OSU's average latency (us) for `op` at collbench size `size`, or busbw from it."""
    test, per_rank = OSU[op]
    osu_size = size // ranks if per_rank else size
    exe = os.path.join(args.osu, test)
    done = subprocess.run(mpirun(ranks) + [exe, "-m", f"{osu_size}:{osu_size}", "-f"],
                          capture_output=True, text=True, cwd=ROOT)
    rows = [l.split() for l in done.stdout.splitlines() if l.strip() and l.split()[0].isdigit()]
    if done.returncode != 0 or not rows:
        sys.exit(f"{test} failed ({done.returncode}): {done.stderr.strip()}")
    avg_us = float(rows[-1][1])
    if metric == "time_us_median":
        return avg_us
    return size / (avg_us * 1e3) * bus(op, ranks)


def mpi4py(args, op, ranks, size, metric):
    """mpi4py's median slowest-rank time (us) for `op` at collbench size `size`, or busbw."""
    bench = os.path.join(ROOT, "scripts", "mpi4py_bench.py")
    done = subprocess.run(mpirun(ranks) + [args.mpi4py, bench, "--op", op, "--bytes", str(size),
                                           "--iters", "200" if metric == "time_us_median" else "40"],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0 or not done.stdout.split():
        sys.exit(f"mpi4py_bench failed ({done.returncode}): {done.stderr.strip()}")
    moved, median_us = int(done.stdout.split()[2]), float(done.stdout.split()[3])
    if metric == "time_us_median":
        return median_us
    return moved / (median_us * 1e3) * bus(op, ranks)


def copy_rate(size, threads):
    """Each core's copy rate (GB/s) while `threads` cores copy `size` bytes at once, on the
    buffers the collectives use (examples/memcpy.rs)."""
    exe = os.path.join(ROOT, "target", "release", "examples", "memcpy")
    done = subprocess.run([exe, size, "20", str(threads)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"memcpy failed ({done.returncode}): {done.stderr.strip()}")
    return float(done.stdout.strip().splitlines()[-1].split("=")[1])


def copy_bound(op, ranks, rate):
    """The busbw (GB/s) a call of `op` cannot exceed when min(ranks, cores) cores each copy at
    `rate`: t >= COPIED(p) x S / (cores x rate), busbw = S / t x the op's bus factor."""
    if op not in COPIED:
        return None
    return copiers(ranks) * rate / COPIED[op](ranks) * bus(op, ranks)


CLASSES = (("small", ["-b", "8", "-e", "64", "-f", "2"], "time_us_median"),
           ("mid", "mid", "busbw_gbps"), ("large", "large", "busbw_gbps"))


def one_repetition(i, args, tmp, res):
    """Every (world, size class) once per backend, host and MPI alternating which goes first,
    then OSU where asked."""
    for ranks in args.ranks:
        for name, sizes, metric in (c for c in CLASSES if c[0] in args.classes):
            if isinstance(sizes, str):
                size = getattr(args, sizes)
                sizes = ["-b", size, "-e", size]
            order = ("host", "mpi") if i % 2 == 0 else ("mpi", "host")
            rate = copy_rate(args.large, copiers(ranks)) if name == "large" else None
            got, stat = {}, {}
            for backend in order:
                out = os.path.join(tmp, f"{backend}-{ranks}-{name}-{i}")
                rows = sweep(backend, ranks, sizes, out, args.ops)
                got[backend] = smallest(rows, metric)
                stat[backend] = smallest(rows, "osu_stat_us")
            for op, (size, host) in got["host"].items():
                if op in got["mpi"]:
                    mpi = got["mpi"][op][1]["auto"]
                    peer = osu(args, op, ranks, size, metric) if args.osu and op in OSU else None
                    py = (mpi4py(args, op, ranks, size, metric)
                          if args.mpi4py and op in MPI4PY_OPS else None)
                    stats = (stat["host"][op][1], stat["mpi"][op][1]["auto"])
                    bound = copy_bound(op, ranks, rate) if rate else None
                    res.setdefault((name, ranks, op), []).append(
                        (size, host, mpi, peer, py, stats, bound))


def better(name):
    return min if name == "small" else max


def row(name, launches):
    """The host algorithm with the best median over launches, and per launch pair its value,
    MPI's and the ratio (>= 1: host at least matches)."""
    algos = set.intersection(*(set(launch[1]) for launch in launches))
    med = {a: statistics.median(launch[1][a] for launch in launches) for a in algos}
    algo = better(name)(med, key=med.get)
    pairs = [(h[algo], m, m / h[algo] if name == "small" else h[algo] / m, o, py,
              stats[0][algo], stats[1], bound) for _, h, m, o, py, stats, bound in launches]
    return algo, pairs


def report(res, args, seconds):
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((l.split(":", 1)[1].strip() for l in lscpu.splitlines()
                  if l.startswith("Model name")), platform.processor())
    mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    print(f"# {platform.node()} {time.strftime('%Y-%m-%d %H:%M %Z')} cpu={model} "
          f"cores={os.cpu_count()} launches={args.launches} wall={seconds:.0f}s")
    print(f"# {mpi.splitlines()[0] if mpi else 'mpirun: unknown version'}; host: best "
          f"algorithm by median over launches; ratio per launch pair, >= 1: host at least matches")
    for name, unit, ratio in (("small", "median time us", "MPI time / host time"),
                              ("mid", "busbw GB/s", "host busbw / MPI busbw"),
                              ("large", "busbw GB/s", "host busbw / MPI busbw")):
        if name not in args.classes:
            continue
        print(f"\n## {name}: {unit}, median [min..max] over launches; ratio = {ratio}"
              f"{'; osu: OSU average latency (busbw from it)' if args.osu else ''}"
              f"{'; mpi4py: median slowest-rank time (busbw from it)' if args.mpi4py else ''}")
        rank_mean = name == "small" and args.osu
        if rank_mean:
            print("# host~osu, mpi~osu: OSU's own statistic from each backend's ranks.csv, the mean"
                  " over ranks of each rank's mean time (us), to compare with osu like for like")
        if name == "large":
            print("# bound: the copy bound, min(ranks, cores) cores each copying at the rate "
                  "examples/memcpy.rs measures with that many copying at once (- for reductions)")
        extra = f"{'host~osu':>22s}{'mpi~osu':>22s}" if rank_mean else ""
        extra += f"{'bound':>22s}" if name == "large" else ""
        print(f"{'ranks':>5s} {'op':13s} {'bytes':>9s} {'host algo':18s} "
              f"{'host':>21s} {'mpi (auto)':>21s} {'ratio':>21s}{'osu':>22s}{'mpi4py':>22s}{extra}")
        for (n, ranks, op), launches in sorted(res.items()):
            if n != name:
                continue
            algo, pairs = row(name, launches)
            cols = [spread([p[k] for p in pairs]) for k in range(3)]
            for k in (3, 4) + ((7,) if name == "large" else ()):
                peer = [p[k] for p in pairs if p[k] is not None]
                cols.append(spread(peer) if peer else f"{'-':>21s}")
            if rank_mean:
                cols += [spread([p[k] for p in pairs]) for k in (5, 6)]
            print(f"{ranks:5d} {op:13s} {launches[0][0]:9d} {algo:18s} {' '.join(cols)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=5, help="repetitions of every launch (5)")
    ap.add_argument("--ranks", default="2,4", help="world sizes, comma separated (2,4)")
    ap.add_argument("--mid", default="1M", help="the middle size (1M)")
    ap.add_argument("--large", default="64M", help="the large size (64M)")
    ap.add_argument("--ops", default=OPS, help="collectives, comma separated (all nine)")
    ap.add_argument("--osu", help="folder of OSU's collective tests (osu_allgather, ...)")
    ap.add_argument("--mpi4py", help="a Python with mpi4py and numpy (/usr/bin/python3)")
    ap.add_argument("--classes", default="small,mid,large",
                    help="size classes measured, comma separated (small,mid,large)")
    ap.add_argument("--keep", action="store_true", help="keep the results folders")
    args = ap.parse_args()
    args.ranks = [int(r) for r in args.ranks.split(",")]
    args.classes = args.classes.split(",")
    if not set(args.classes) <= {c[0] for c in CLASSES}:
        ap.error(f"--classes {','.join(args.classes)}: give some of small,mid,large")
    if args.launches < 1:
        ap.error(f"--launches {args.launches}: give 1 or more (5 or more for numbers to keep)")
    subprocess.run(["cargo", "build", "--release", "-q", "--features", "mpi", "--bin", "collbench",
                    "--example", "memcpy"], check=True, cwd=ROOT)
    tmp = tempfile.mkdtemp(prefix="collbench-host-vs-mpi-")
    res = {}
    start = time.monotonic()
    for i in range(args.launches):
        one_repetition(i, args, tmp, res)
    report(res, args, time.monotonic() - start)
    if args.keep:
        print(f"# results: {tmp}")
    else:
        subprocess.run(["rm", "-rf", tmp], check=False)


if __name__ == "__main__":
    sys.exit(main())
