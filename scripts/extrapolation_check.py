#!/usr/bin/env python3
"""How well `collbench fit --predict` extrapolates on public nccl-tests logs (docs/METHODOLOGY.md,
"Extrapolation on public data").

For each data set of tests/data/scaling (sources in its README.md): import the logs, fit the
node counts up to a cut, predict the largest node count beyond it with `algo=auto`, and compare
with what that node count measured, size by size (out of place, rows without wrong elements,
sizes >= 1 MiB): the plain model (`model_time_us`), collbench's answer (`time_us`: anchored on
the largest fitted world where that validated better), and the naive guess that each size keeps
the bus bandwidth of the largest fitted world. Prints mean |error| and how many measured times
fall inside the answer's interval.

Usage: cargo build --release && python3 scripts/extrapolation_check.py
"""
import csv, json, os, subprocess, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "collbench")
DATA = os.path.join(ROOT, "tests", "data", "scaling")
ALPS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
POLARIS = [2, 8, 256, 540]
# (name, log prefix, op, node counts, fit up to, target)
STUDIES = [
    ("Alps aws-ofi 1.9.2", "alps-gh200-aws1.9.2_all_reduce", "allreduce", ALPS, 16, 128),
    ("Alps aws-ofi 1.9.2", "alps-gh200-aws1.9.2_all_reduce", "allreduce", ALPS, 32, 256),
    ("Alps aws-ofi 1.9.2", "alps-gh200-aws1.9.2_all_reduce", "allreduce", ALPS, 64, 512),
    ("Alps aws-ofi 1.13.0", "alps-gh200-aws1.13.0_all_reduce", "allreduce", ALPS, 16, 128),
    ("Alps aws-ofi 1.13.0", "alps-gh200-aws1.13.0_all_reduce", "allreduce", ALPS, 32, 256),
    ("Alps aws-ofi 1.13.0", "alps-gh200-aws1.13.0_all_reduce", "allreduce", ALPS, 64, 512),
    ("Polaris NCCL 2.21 s5", "polaris-nccl2.21-s5_all_reduce", "allreduce", POLARIS, 8, 256),
    ("Polaris NCCL 2.21 s5", "polaris-nccl2.21-s5_all_gather", "allgather", POLARIS, 8, 256),
    ("Polaris NCCL 2.21 s5", "polaris-nccl2.21-s5_all_reduce", "allreduce", POLARIS, 256, 540),
]


def collbench(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def curve(run):
    """bytes -> mean µs of the out-of-place points without wrong elements."""
    out = {}
    for r in csv.DictReader(open(os.path.join(run, "summary.csv"))):
        if r["in_place"] == "true" or r.get("wrong") not in (None, "", "0"):
            continue
        out[int(r["bytes"])] = float(r["time_us_mean"])
    return out


def bus(op, p):
    return 2 * (p - 1) / p if op == "allreduce" else (p - 1) / p


def study(tmp, name, prefix, op, nodes, upto, target, gpn=4):
    runs = {}
    for n in nodes:
        runs[n] = os.path.join(tmp, f"{prefix}_N{n}")
        if not os.path.exists(runs[n]):
            log = os.path.join(DATA, f"{prefix}_N{n}_G{gpn}.log")
            collbench("import", "nccl-tests", log, "--out", runs[n]).check_returncode()
    fit = os.path.join(tmp, f"{prefix}_upto{upto}.json")
    collbench("fit", *[runs[n] for n in nodes if n <= upto], "--output", fit, "--force")
    top = max(n for n in nodes if n <= upto)
    anchor, truth = curve(runs[top]), curve(runs[target])
    err = {"model": [], "answer": [], "naive": []}
    inside, form = 0, "?"
    for b in sorted(truth):
        if b < 1 << 20 or b not in anchor:
            continue
        spec = f"op={op},algo=auto,world={target * gpn},nodes={target},bytes={b}"
        r = collbench("fit", fit, "--json", "--predict", spec)
        if r.returncode:
            continue
        p = json.loads(r.stdout)
        form = p["form"] + ("" if p["method"] == "model" else ", " + p["method"])
        t = truth[b]
        naive = anchor[b] * bus(op, target * gpn) / bus(op, top * gpn)
        for k, v in (("model", p["model_time_us"]), ("answer", p["time_us"]), ("naive", naive)):
            err[k].append(abs(v - t) / t)
        inside += p["interval_us"][0] <= t <= p["interval_us"][1]
    mean = {k: 100 * sum(v) / max(len(v), 1) for k, v in err.items()}
    n = len(err["model"])
    print(f"| {name} {op} | {upto} | {target} ({target // top}x) | {form} | "
          f"{mean['model']:.0f}% | {mean['answer']:.0f}% | {mean['naive']:.0f}% | {inside}/{n} |")


def main():
    print("| data | fitted up to (nodes) | predicted (nodes) | form | plain model | "
          "collbench | naive | inside interval |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for s in STUDIES:
            study(tmp, *s)


if __name__ == "__main__":
    main()
