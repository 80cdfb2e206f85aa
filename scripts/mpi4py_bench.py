#!/usr/bin/python3
"""One collective through mpi4py on numpy buffers, timed by collbench's protocol (docs/PERFORMANCE.md).

Run under mpirun with the system Python that has mpi4py, e.g.
    mpirun -np 2 /usr/bin/python3 scripts/mpi4py_bench.py --op allgather --bytes 1M

Sizes follow nccl-tests (collbench's S): AllGather, AllToAll, Gather and Scatter move S bytes
in all (S/p per rank and block), SendRecv S from each rank to the next. f32 elements, out of
place, root 0. Per point: `--warmup` untimed calls, then `--iters` timed ones, each after an
MPI_Barrier, the iteration's time being the slowest rank's (as collbench times its MPI
backend); then `--iters` calls back to back, their mean over ranks (as OSU reports). Rank 0
prints one line: op, ranks, bytes, median and mean of the slowest-rank times, the
back-to-back mean, all in microseconds. numpy asks for transparent huge pages for arrays of 4
MiB and more, as collbench does for its call buffers.
"""
import argparse
import statistics
import sys

import numpy as np
from mpi4py import MPI

OPS = ("allgather", "alltoall", "gather", "scatter", "sendrecv")


def size(text):
    """8, 64K, 1M, 2G: bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    mult = units.get(text[-1:].upper(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def buffers(op, nbytes, p):
    """(send, recv) numpy f32 arrays for one call of `op` at collbench size `nbytes`."""
    total = max(nbytes // 4 // p * p, p)
    block = total // p
    send_n, recv_n = {"allgather": (block, total), "alltoall": (total, total),
                      "gather": (block, total), "scatter": (total, block),
                      "sendrecv": (total, total)}[op]
    return np.ones(send_n, dtype=np.float32), np.zeros(recv_n, dtype=np.float32)


def caller(op, comm):
    p, r = comm.Get_size(), comm.Get_rank()
    right, left = (r + 1) % p, (r - 1) % p
    return {"allgather": lambda s, d: comm.Allgather(s, d),
            "alltoall": lambda s, d: comm.Alltoall(s, d),
            "gather": lambda s, d: comm.Gather(s, d, root=0),
            "scatter": lambda s, d: comm.Scatter(s, d, root=0),
            "sendrecv": lambda s, d: comm.Sendrecv(s, dest=right, recvbuf=d, source=left)}[op]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", choices=OPS, required=True)
    ap.add_argument("--bytes", type=size, required=True, help="collbench's S (8, 1M, 64M)")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    p = comm.Get_size()
    send, recv = buffers(args.op, args.bytes, p)
    call = caller(args.op, comm)
    for _ in range(args.warmup):
        call(send, recv)
    times = []
    for _ in range(args.iters):
        comm.Barrier()
        t0 = MPI.Wtime()
        call(send, recv)
        times.append(MPI.Wtime() - t0)
    slowest = np.zeros(args.iters)
    comm.Allreduce(np.array(times), slowest, op=MPI.MAX)
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(args.iters):
        call(send, recv)
    b2b = comm.allreduce((MPI.Wtime() - t0) / args.iters, op=MPI.SUM) / p
    if comm.Get_rank() == 0:
        print(f"{args.op} {p} {send.nbytes * p if args.op in ('allgather', 'gather') else send.nbytes} "
              f"{statistics.median(slowest) * 1e6:.3f} {slowest.mean() * 1e6:.3f} {b2b * 1e6:.3f}")


if __name__ == "__main__":
    sys.exit(main())
