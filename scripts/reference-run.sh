#!/usr/bin/env bash
# Regenerates the committed reference run of the host backend on a 2-core VM:
#
#   results/reference-host-2core/    the results folder (meta.json, summary.csv, samples.csv,
#                                    ranks.csv), fit.json, report.html, and projection/ (an
#                                    FSDP projection from a bundled profile, for its figures)
#   plots/reference-host-2core/      the figures of `collbench plot` (PNG and SVG)
#
# Run from anywhere: scripts/reference-run.sh   (about two minutes on 2 cores)
#
# The sweep: AllReduce (ring and tree), AllGather and ReduceScatter (ring), f32, 8 B to 8 MiB
# doubling, 4 rank processes measured as groups of 2, 3 and 4 ranks. Groups larger than the
# number of cores are oversubscribed (ranks yield to each other), which is what the world-size
# figures show on such a machine. 50 timed iterations per point keep samples.csv small enough
# to commit; medians are stable at that count on this backend.
set -euo pipefail
cd "$(dirname "$0")/.."

name=${REFERENCE_NAME:-reference-host-2core}
run=results/$name
figs=plots/$name

cargo build --release --locked --quiet
bin=target/release/collbench

rm -rf "$run" "$figs"
"$bin" sweep --no-progress --op allreduce,allgather,reducescatter --algo ring,tree \
    --ranks 4 --world-sizes 2,3,4 -b 8 -e 8M -f 2 --iters 50 --warmup 5 --out "$run"
"$bin" fit "$run" -o "$run/fit.json" >/dev/null
"$bin" project --profile h100-ib400 --model llama2-7b --world-sizes 8,16,...,1024 \
    --tp 1,2,4 --pp 1,2 --out "$run/projection" >/dev/null
"$bin" plot "$run" --fit "$run/fit.json" --projection "$run/projection" --out "$figs" >/dev/null
"$bin" report "$run" --fit "$run/fit.json" -o "$run/report.html"
echo "reference run written to $run, figures to $figs"
