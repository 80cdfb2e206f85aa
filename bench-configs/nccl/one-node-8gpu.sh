#!/usr/bin/env bash
# NCCL sweep of one 8-GPU node (H100 SXM class), and the nccl-tests runs that measure the same
# points, to cross-check the two tools. Run from the repository root on the GPU node:
#
#   bench-configs/nccl/one-node-8gpu.sh            # collbench only
#   NCCL_TESTS=/opt/nccl-tests/build bench-configs/nccl/one-node-8gpu.sh   # and nccl-tests
#
# Same points: total size S from 8 B to 8 GiB by factors of 2, bf16, in and out of place, 20
# timed iterations after 5 warm-up ones, one process per GPU, root 0, sum. Compare collbench's
# busbw_gbps_mean (busbw from the mean time) with nccl-tests' busbw column: nccl-tests times the
# 20 iterations as one batch and prints their mean. NCCL_ALGO and NCCL_PROTO, where set, are the
# same variables collbench sets for --algo and --proto (auto: unset). collbench runs AllToAll and
# SendRecv as grouped ncclSend/ncclRecv, out of place only (nccl-tests runs their in-place half
# unchecked, #wrong N/A). nccl-tests does the same for sendrecv, and for alltoall before NCCL
# 2.28; from 2.28 its alltoall calls ncclAlltoAll instead. It also rounds alltoall's block per
# peer down to 16 B, so its rows below 128 B (bf16, 8 ranks) are smaller than collbench's.
set -euo pipefail

COLLBENCH=${COLLBENCH:-./target/release/collbench}
OUT=${OUT:-results/nccl-8gpu-$(date -u +%Y%m%d-%H%M%S)}
COMMON=(-b 8 -e 8G -f 2 --iters 20 --warmup 5 --dtype bf16 --in-place both)

"$COLLBENCH" sweep --backend nccl --ranks 8 "${COMMON[@]}" \
    --op allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv --out "$OUT/auto"
# Forced algorithms and protocols for AllReduce, in one folder: fit, plot, compare and accept
# keep each (algorithm, protocol) a curve of its own.
"$COLLBENCH" sweep --backend nccl --ranks 8 "${COMMON[@]}" --op allreduce \
    --algo ring,tree,nvls --proto ll,ll128,simple --out "$OUT/allreduce-forced"
# CUDA-graph mode: each iteration one launch of a graph holding the captured call.
"$COLLBENCH" sweep --backend nccl --ranks 8 "${COMMON[@]}" --cuda-graph \
    --op allreduce,allgather --out "$OUT/cuda-graph"

[ -n "${NCCL_TESTS:-}" ] || exit 0
# nccl-tests built with MPI=1; -g 1: one GPU per process, as collbench runs. -c 1 checks results.
NT=(-b 8 -e 8G -f 2 -g 1 -n 20 -w 5 -c 1 -d bfloat16)
for t in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
    mpirun -np 8 "$NCCL_TESTS/${t}_perf" "${NT[@]}" -o sum -r 0 | tee "$OUT/nccl-tests-$t.txt"
done
# -n 1 -G 20: one call captured per graph, the graph launched 20 times, as --cuda-graph does.
for t in all_reduce all_gather; do
    mpirun -np 8 "$NCCL_TESTS/${t}_perf" -b 8 -e 8G -f 2 -g 1 -n 1 -G 20 -w 5 -c 1 -d bfloat16 \
        | tee "$OUT/nccl-tests-$t-graph.txt"
done
for proto in LL LL128 Simple; do
    for algo in Ring Tree NVLS,NVLSTree; do
        NCCL_ALGO=$algo NCCL_PROTO=$proto mpirun -np 8 -x NCCL_ALGO -x NCCL_PROTO \
            "$NCCL_TESTS/all_reduce_perf" "${NT[@]}" | tee "$OUT/nccl-tests-all_reduce-$algo-$proto.txt"
    done
done
