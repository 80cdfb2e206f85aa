//! One collective as the NCCL backend enqueues it: the op, its device buffers and NCCL's count
//! and root, and the rank's place in its communicator. [`super::calls`] makes the FFI calls
//! of one; [`super::p2p`] lists the sends and receives of a point-to-point one.

use crate::collective::{DType, Op, ReduceOp};

/// One collective, ready to enqueue: device addresses and NCCL's count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enqueue {
    pub op: Op,
    pub dtype: DType,
    pub redop: ReduceOp,
    /// The op made for this point where `redop` has no built-in one (mulsum's
    /// [`ScaledSum`](super::premul::ScaledSum)), passed in its place.
    pub made_redop: Option<super::sys::ncclRedOp_t>,
    /// Device address of the send buffer (`CUdeviceptr`).
    pub send: u64,
    /// Device address of the receive buffer; equal to `send` (or offset into it) in place.
    pub recv: u64,
    /// The count argument NCCL takes for `op`: the per-op table's
    /// [`Shape::call_count`](crate::collective::Shape::call_count).
    pub count: usize,
    /// The root of Broadcast, Reduce, Gather and Scatter (the point's `--root`).
    pub root: i32,
    /// This rank's index in the communicator, and the communicator's size: the peers of the
    /// point-to-point ops.
    pub rank: usize,
    pub nranks: usize,
}
