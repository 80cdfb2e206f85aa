//! The five collectives as NCCL calls: the one FFI call that enqueues a collective on a stream,
//! and NCCL's own estimate of its time. The count each op takes is the per-op table's
//! ([`Shape::call_count`](crate::collective::Shape::call_count)).

use std::os::raw::c_void;

use super::error::NcclError;
use super::loader::{Nccl, RawComm};
use super::{map, sys};
use crate::collective::{DType, Op, ReduceOp};

/// One collective, ready to enqueue: device addresses and NCCL's count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enqueue {
    pub op: Op,
    pub dtype: DType,
    pub redop: ReduceOp,
    /// Device address of the send buffer (`CUdeviceptr`).
    pub send: u64,
    /// Device address of the receive buffer; equal to `send` (or offset into it) in place.
    pub recv: u64,
    /// The count argument NCCL takes for `op`: the per-op table's
    /// [`Shape::call_count`](crate::collective::Shape::call_count).
    pub count: usize,
    /// Root of Broadcast and Reduce (rank 0, as the checks expect).
    pub root: i32,
}

impl Nccl {
    /// Enqueues `e` on `stream` for `comm`. Asynchronous: errors found on the device surface
    /// later through [`Nccl::async_error`].
    ///
    /// # Safety
    /// `e.send` and `e.recv` must be device allocations of the communicator's device, large
    /// enough for `e` (nccl.h: send `count` elements, or `count` per rank for ReduceScatter;
    /// receive `count`, or `count × nranks` for AllGather), and stay allocated until the work
    /// on `stream` completes; `stream` must be a live stream of that device.
    pub unsafe fn enqueue(
        &self,
        comm: &RawComm,
        e: &Enqueue,
        stream: sys::cudaStream_t,
    ) -> Result<(), NcclError> {
        let send = e.send as usize as *const c_void;
        let recv = e.recv as usize as *mut c_void;
        let (dt, op, c) = (map::dtype(e.dtype), map::redop(e.redop), comm.as_ptr());
        let (name, raw) = match e.op {
            Op::AllReduce => (
                "ncclAllReduce",
                (self.all_reduce)(send, recv, e.count, dt, op, c, stream),
            ),
            Op::AllGather => (
                "ncclAllGather",
                (self.all_gather)(send, recv, e.count, dt, c, stream),
            ),
            Op::ReduceScatter => (
                "ncclReduceScatter",
                (self.reduce_scatter)(send, recv, e.count, dt, op, c, stream),
            ),
            Op::Broadcast => (
                "ncclBroadcast",
                (self.broadcast)(send, recv, e.count, dt, e.root, c, stream),
            ),
            Op::Reduce => (
                "ncclReduce",
                (self.reduce)(send, recv, e.count, dt, op, e.root, c, stream),
            ),
            // Not offered (`Op::nccl_algos` is empty): the plan never asks for it.
            Op::AllToAll | Op::SendRecv | Op::Gather | Op::Scatter => {
                return Err(NcclError::Argument(format!(
                    "the nccl backend does not run {} yet",
                    e.op
                )))
            }
        };
        self.check(name, raw)
    }
}

impl Nccl {
    /// NCCL's own estimate of `e`'s time in microseconds: the call inside
    /// `ncclGroupStart`/`ncclGroupSimulateEnd`, which plans it (algorithm, protocol, channels)
    /// without launching anything. `None` where the library has no `ncclGroupSimulateEnd` or
    /// gives no estimate (a world of one). Collective like the call: every member simulates
    /// the same calls in the same order, since planning may connect peers.
    ///
    /// # Safety
    /// As [`Nccl::enqueue`].
    pub unsafe fn estimate(
        &self,
        comm: &RawComm,
        e: &Enqueue,
        stream: sys::cudaStream_t,
    ) -> Result<Option<f64>, NcclError> {
        let Some(simulate_end) = self.group_simulate_end else {
            return Ok(None);
        };
        let mut sim = sim_info(self.version_code()?);
        self.check("ncclGroupStart", (self.group_start)())?;
        let queued = self.enqueue(comm, e, stream);
        // The group is ended whatever the call returned, or this thread stays inside it.
        let ended = self.check("ncclGroupSimulateEnd", simulate_end(&mut sim));
        queued?;
        ended?;
        Ok(estimate_us(sim.estimated_time))
    }
}

/// `NCCL_SIM_INFO_INITIALIZER` for the library of version `code`.
pub fn sim_info(code: std::os::raw::c_int) -> sys::ncclSimInfo_t {
    sys::ncclSimInfo_t {
        size: std::mem::size_of::<sys::ncclSimInfo_t>(),
        magic: sys::NCCL_SIM_INFO_MAGIC,
        version: code.max(0) as std::os::raw::c_uint,
        estimated_time: sys::NCCL_UNDEF_FLOAT,
    }
}

/// An estimate as recorded: `None` for `NCCL_UNDEF_FLOAT` and anything not a time.
pub fn estimate_us(t: f32) -> Option<f64> {
    (t.is_finite() && t >= 0.0).then_some(f64::from(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulation_info_is_nccl_h_initializer() {
        // size_t, two unsigned ints, a float: 24 bytes with the tail padding on 64-bit Linux.
        assert_eq!(std::mem::size_of::<sys::ncclSimInfo_t>(), 24);
        let s = sim_info(22203);
        assert_eq!((s.size, s.magic, s.version), (24, 0x7468_5283, 22203));
        assert_eq!(s.estimated_time, -1.0);
        assert_eq!(estimate_us(sys::NCCL_UNDEF_FLOAT), None);
        assert_eq!(estimate_us(f32::NAN), None);
        assert_eq!(estimate_us(12.5), Some(12.5));
        assert_eq!(estimate_us(0.0), Some(0.0));
    }
}
