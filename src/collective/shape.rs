//! The buffer shape of a call and the bandwidths derived from it (nccl-tests' conventions; see
//! the [`super`] module docs).

use serde::{Deserialize, Serialize};

use super::{DType, Layout, Op};

/// The buffer shape of one collective call, following nccl-tests conventions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Total buffer size `S` in bytes after rounding to whole elements, or where the op splits
    /// the buffer to whole 16-byte blocks per rank ([`block_count`]).
    pub bytes: usize,
    /// Elements in `S` (the nccl-tests `count` column).
    pub count: usize,
    /// Elements each rank contributes (AllGather) or receives (ReduceScatter); `count` otherwise.
    pub count_per_rank: usize,
    /// Bytes of the input buffer of one rank.
    pub in_bytes: usize,
    /// Bytes of the output buffer of one rank.
    pub out_bytes: usize,
}

impl Shape {
    /// The shape for a requested total size `requested` over `p` ranks. `bytes` is 0 when the
    /// request is too small to hold one element (where the op splits the buffer: one 16-byte
    /// block per rank).
    pub fn new(op: Op, dtype: DType, requested: usize, p: usize) -> Shape {
        let el = dtype.size();
        let p = p.max(1);
        if op.splits_per_rank() {
            let per_rank = block_count(requested / el, p, el);
            let bytes = per_rank * p * el;
            let (in_bytes, out_bytes) = match op.layout() {
                // Gather: the root's output holds every block; other ranks' outputs are
                // allocated as nccl-tests does (S everywhere), only the root's is defined.
                Layout::Collect => (per_rank * el, bytes),
                // One block of S/p for every rank, sent and received; an uneven exchange
                // without its pattern is the uniform one (its pattern's shape:
                // `collective::uneven::shape`).
                Layout::Exchange | Layout::Uneven | Layout::Whole => (bytes, bytes),
                Layout::Distribute => (bytes, per_rank * el),
            };
            Shape {
                bytes,
                count: per_rank * p,
                count_per_rank: per_rank,
                in_bytes,
                out_bytes,
            }
        } else {
            let count = requested / el;
            let bytes = count * el;
            Shape {
                bytes,
                count,
                count_per_rank: count,
                in_bytes: bytes,
                out_bytes: bytes,
            }
        }
    }

    /// The count argument of a call of `op` on this shape, as MPI and NCCL (and so nccl-tests)
    /// both take it: elements of the whole buffer for AllReduce, Broadcast and Reduce; elements
    /// per rank (the send count of AllGather, the receive count of ReduceScatter) for the ops
    /// that split the buffer.
    pub fn call_count(&self, op: Op) -> usize {
        match op.splits_per_rank() {
            false => self.count,
            true => self.count_per_rank,
        }
    }
}

/// Elements in each rank's block of `count` elements split over `p` ranks, as nccl-tests
/// (since 2.13.12, commit 29f4114) cuts it: whole elements, rounded down to a multiple of
/// 16 bytes (`(count/nranks) & ~(16/eltSize - 1)` in all_gather.cu and every test that divides
/// the buffer), so that every block starts 16-byte aligned at any p.
pub fn block_count(count: usize, p: usize, el: usize) -> usize {
    let per_block = (16 / el.max(1)).max(1);
    count / p.max(1) / per_block * per_block
}

/// Algorithm bandwidth in GB/s (1e9 bytes/s) of `op` on `bytes` (S) among `p` ranks in
/// `time_us` microseconds, as nccl-tests reports it: `S / t` times the op's
/// [`Op::algbw_factor`]; 0 for a time that is not positive.
pub fn algbw_gbps(op: Op, bytes: usize, p: usize, time_us: f64) -> f64 {
    if time_us > 0.0 {
        bytes as f64 / (time_us * 1e3) * op.algbw_factor(p)
    } else {
        0.0
    }
}

/// Bus bandwidth from algorithm bandwidth.
pub fn busbw_gbps(op: Op, p: usize, algbw_gbps: f64) -> f64 {
    algbw_gbps * op.busbw_factor(p)
}
