#!/usr/bin/env bash
# NCCL sweep across two 8-GPU nodes under Slurm, and the nccl-tests runs that measure the same
# points. Submit from the repository root (a shared file system):
#
#   sbatch -N 2 --ntasks-per-node=8 --gpus-per-node=8 bench-configs/nccl/two-nodes-slurm.sh
#   NCCL_TESTS=/opt/nccl-tests/build sbatch -N 2 ... bench-configs/nccl/two-nodes-slurm.sh
#
# srun starts one collbench per GPU; rank 0 serves the store on the first node (port 29517, or
# COLLBENCH_STORE_ADDR=host:port), every rank drives the GPU of its local rank, and rank 0
# writes the results. World sizes 16 (both nodes) and 8 (the first node) are split from the
# world communicator. Compare busbw_gbps_mean with nccl-tests' busbw.
set -euo pipefail

COLLBENCH=${COLLBENCH:-./target/release/collbench}
OUT=${OUT:-results/nccl-2nodes-$(date -u +%Y%m%d-%H%M%S)}
COLLBENCH_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
export COLLBENCH_TOKEN

srun "$COLLBENCH" sweep --backend nccl -b 8 -e 8G -f 2 --iters 20 --warmup 5 --dtype bf16 \
    --in-place both --op allreduce,allgather,reducescatter --world-sizes 16,8 --out "$OUT"

[ -n "${NCCL_TESTS:-}" ] || exit 0
# nccl-tests built with MPI=1 against the MPI that srun's PMI plugin serves (--mpi=pmix).
for t in all_reduce all_gather reduce_scatter; do
    srun --mpi=pmix "$NCCL_TESTS/${t}_perf" -b 8 -e 8G -f 2 -g 1 -n 20 -w 5 -c 1 -d bfloat16 \
        | tee "$OUT/nccl-tests-$t.txt"
done
