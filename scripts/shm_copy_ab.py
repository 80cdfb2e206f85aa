#!/usr/bin/env python3
"""The host backend's two shared-memory copy modes against each other and against MPI.

Repeats whole launches, rotating their order every repetition: the host backend with
COLLBENCH_SHM_COPY=auto (single-copy large messages) and =staged (every byte through the slots
twice), and the MPI backend (`mpirun --oversubscribe`, `--algo auto`), over the same points:
AllGather (ring), Broadcast (tree) and AllReduce (ring), f32, one size (64 MiB), at 2 and 4
ranks. Prints, per op and world, the median busbw over launches [min..max] of each, and the
ratios auto/staged and auto/MPI taken launch by launch (docs/PERFORMANCE.md, "Single-copy
messages"). Needs a `--features mpi` build (it builds one).

Usage: python3 scripts/shm_copy_ab.py [--launches 5] [--ranks 2,4] [--size 64M]
"""
import argparse, csv, os, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "collbench")
OPS = {"allgather": "ring", "broadcast": "tree", "allreduce": "ring"}
KINDS = ("auto", "staged", "mpi")


def launch(kind, ranks, size, out):
    """One whole launch; {op: busbw}."""
    args = ["sweep", "--no-progress", "--out", out, "--op", ",".join(OPS), "--dtype", "f32",
            "-b", size, "-e", size]
    env = dict(os.environ)
    if kind == "mpi":
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        cmd = (["mpirun", "-np", str(ranks), "--oversubscribe"] + root + [BIN] + args
               + ["--backend", "mpi", "--algo", "auto"])
    else:
        env["COLLBENCH_SHM_COPY"] = kind
        cmd = [BIN] + args + ["--ranks", str(ranks), "--algo", "ring,tree"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr.strip()}")
    with open(os.path.join(out, "summary.csv")) as f:
        rows = list(csv.DictReader(f))
    return {r["op"]: float(r["busbw_gbps"]) for r in rows
            if kind == "mpi" or r["algo"] == OPS[r["op"]]}


def spread(xs):
    return f"{statistics.median(xs):.2f} [{min(xs):.2f}..{max(xs):.2f}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=5)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--size", default="64M")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q", "--features", "mpi", "--bin",
                    "collbench"], cwd=ROOT, check=True)
    res = {}  # (ranks, kind) -> [ {op: busbw} per launch ]
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.launches):
            for ranks in [int(r) for r in args.ranks.split(",")]:
                order = KINDS[i % 3:] + KINDS[:i % 3]
                for kind in order:
                    out = os.path.join(tmp, f"{kind}-{ranks}-{i}")
                    res.setdefault((ranks, kind), []).append(launch(kind, ranks, args.size, out))
    print("| op | ranks | auto busbw (GB/s) | staged | MPI | auto / staged | auto / MPI |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for ranks in [int(r) for r in args.ranks.split(",")]:
        for op in OPS:
            v = {k: [launch_[op] for launch_ in res[(ranks, k)]] for k in KINDS}
            vs_staged = [a / s for a, s in zip(v["auto"], v["staged"])]
            vs_mpi = [a / m for a, m in zip(v["auto"], v["mpi"])]
            print(f"| {op} | {ranks} | {spread(v['auto'])} | {spread(v['staged'])} | "
                  f"{spread(v['mpi'])} | {spread(vs_staged)} | {spread(vs_mpi)} |")


if __name__ == "__main__":
    main()
