//! The ops as NCCL calls: the one FFI call that enqueues a collective on a stream, the group of
//! `ncclSend`/`ncclRecv` calls of a point-to-point op ([`super::p2p`] lists them), and NCCL's
//! own estimate of a collective's time. The count each op takes is the per-op table's
//! ([`Shape::call_count`](crate::collective::Shape::call_count)).

use std::os::raw::{c_int, c_void};

use super::enqueue::Enqueue;
use super::error::NcclError;
use super::lifecycle::RawComm;
use super::loader::Nccl;
use super::p2p::{Dir, Transfer};
use super::{map, sys};
use crate::collective::{Op, Semantics};

impl Nccl {
    /// Enqueues the collective `e` on `stream` for `comm`. Asynchronous: errors found on the
    /// device surface later through [`Nccl::async_error`]. A point-to-point op is refused: it is
    /// a list of calls ([`transfers`](super::p2p::transfers)), which the measurement makes once
    /// per point and issues with [`Nccl::group`].
    ///
    /// # Safety
    /// `e.send` and `e.recv` must be device allocations of the communicator's device, large
    /// enough for `e` (nccl.h: send `count` elements, or `count` per rank for ReduceScatter
    /// and AllToAll; receive `count`, or `count × nranks` for AllGather and AllToAll), and stay
    /// allocated until the work on `stream` completes; `stream` must be a live stream of that
    /// device; `e.rank` and `e.nranks` must be the communicator's.
    pub unsafe fn enqueue(
        &self,
        comm: &RawComm,
        e: &Enqueue,
        stream: sys::cudaStream_t,
    ) -> Result<(), NcclError> {
        let send = e.send as usize as *const c_void;
        let recv = e.recv as usize as *mut c_void;
        let (dt, c) = (map::dtype(e.dtype), comm.as_ptr());
        let op = e.made_redop.or_else(|| map::redop(e.redop));
        let op = op.ok_or_else(|| {
            NcclError::Argument(format!("--redop {} has no op made for the call", e.redop))
        });
        let (name, raw) = match e.op.semantics() {
            Semantics::AllReduce => (
                "ncclAllReduce",
                (self.all_reduce)(send, recv, e.count, dt, op?, c, stream),
            ),
            Semantics::AllGather => (
                "ncclAllGather",
                (self.all_gather)(send, recv, e.count, dt, c, stream),
            ),
            Semantics::ReduceScatter => (
                "ncclReduceScatter",
                (self.reduce_scatter)(send, recv, e.count, dt, op?, c, stream),
            ),
            Semantics::Broadcast => (
                "ncclBroadcast",
                (self.broadcast)(send, recv, e.count, dt, e.root, c, stream),
            ),
            Semantics::Reduce => (
                "ncclReduce",
                (self.reduce)(send, recv, e.count, dt, op?, e.root, c, stream),
            ),
            Semantics::AllToAll | Semantics::Gather | Semantics::Scatter if self.native(e.op) => {
                return self.enqueue_native(send, recv, e, c, stream)
            }
            Semantics::AllToAll
            | Semantics::AllToAllV
            | Semantics::SendRecv
            | Semantics::Gather
            | Semantics::Scatter => {
                return Err(NcclError::Argument(format!(
                    "{} is a group of point-to-point calls with this library, not one call",
                    e.op
                )))
            }
        };
        self.check(name, raw)
    }

    /// Whether this library runs `op` with one call of its own: the collectives always,
    /// AllToAll, Gather and Scatter from NCCL 2.28 (as nccl-tests 2.19 calls them there),
    /// SendRecv never.
    pub fn native(&self, op: Op) -> bool {
        match op.semantics() {
            Semantics::AllToAll => self.all_to_all.is_some(),
            Semantics::Gather => self.gather.is_some(),
            Semantics::Scatter => self.scatter.is_some(),
            Semantics::SendRecv | Semantics::AllToAllV => false,
            Semantics::AllReduce
            | Semantics::AllGather
            | Semantics::ReduceScatter
            | Semantics::Broadcast
            | Semantics::Reduce => true,
        }
    }

    /// What runs `op` with this library, as summary.csv's `nccl_call` records it.
    pub fn call_name(&self, op: Op) -> &'static str {
        match self.native(op) {
            true => op.nccl_function(),
            false => crate::collective::NCCL_GROUPED_P2P,
        }
    }

    /// AllToAll, Gather or Scatter through the library's own function (NCCL 2.28+): `count`
    /// elements per rank, as nccl.h defines them.
    ///
    /// # Safety
    /// As [`Nccl::enqueue`].
    unsafe fn enqueue_native(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        e: &Enqueue,
        c: sys::ncclComm_t,
        stream: sys::cudaStream_t,
    ) -> Result<(), NcclError> {
        let dt = map::dtype(e.dtype);
        let (name, raw) = match (e.op.semantics(), self.all_to_all, self.gather, self.scatter) {
            (Semantics::AllToAll, Some(f), _, _) => {
                ("ncclAlltoAll", f(send, recv, e.count, dt, c, stream))
            }
            (Semantics::Gather, _, Some(f), _) => {
                ("ncclGather", f(send, recv, e.count, dt, e.root, c, stream))
            }
            (Semantics::Scatter, _, _, Some(f)) => {
                ("ncclScatter", f(send, recv, e.count, dt, e.root, c, stream))
            }
            _ => {
                return Err(NcclError::Argument(format!(
                    "this library has no function of its own for {}",
                    e.op
                )))
            }
        };
        self.check(name, raw)
    }

    /// Issues `list` as one group: `ncclGroupStart`, each `ncclSend` or `ncclRecv` in order
    /// (dtype and buffers of `e`), `ncclGroupEnd`, which launches them together, so that the
    /// sends and receives of every rank progress at once. The group is ended whatever a call
    /// returned (the first error is the one reported), or this thread would stay inside it.
    /// Capturable into a CUDA graph like any NCCL call. Fails with [`NcclError::Missing`]
    /// before anything is issued where the library has no `ncclSend` (NCCL older than 2.7).
    ///
    /// # Safety
    /// As [`Nccl::enqueue`], for the regions `list` names: every transfer's `count` elements at
    /// its [`Transfer::address`] lie in `e`'s buffers.
    pub unsafe fn group(
        &self,
        comm: &RawComm,
        e: &Enqueue,
        list: &[Transfer],
        stream: sys::cudaStream_t,
    ) -> Result<(), NcclError> {
        let (send, recv) = self.point_to_point(e.op.name())?;
        let (dt, c) = (map::dtype(e.dtype), comm.as_ptr());
        self.check("ncclGroupStart", (self.group_start)())?;
        let queued = list.iter().try_for_each(|t| {
            let peer = c_int::try_from(t.peer).map_err(|_| {
                NcclError::Argument(format!("peer {} is more than NCCL can address", t.peer))
            })?;
            let at = t.address(e) as usize;
            match t.dir {
                Dir::Send => self.check(
                    "ncclSend",
                    send(at as *const c_void, t.count, dt, peer, c, stream),
                ),
                Dir::Recv => self.check(
                    "ncclRecv",
                    recv(at as *mut c_void, t.count, dt, peer, c, stream),
                ),
            }
        });
        let ended = self.check("ncclGroupEnd", (self.group_end)());
        queued?;
        ended
    }
}

impl Nccl {
    /// Runs `body` between `ncclGroupStart` and `ncclGroupEnd`, so that the calls it enqueues
    /// launch together (nccl-tests `-m`); the group is ended whatever `body` did.
    pub fn grouped(&self, body: impl FnOnce()) -> Result<(), NcclError> {
        // SAFETY: both take no arguments; every group started here is ended below.
        self.check("ncclGroupStart", unsafe { (self.group_start)() })?;
        body();
        // SAFETY: as above.
        self.check("ncclGroupEnd", unsafe { (self.group_end)() })
    }

    /// NCCL's own estimate of `e`'s time in microseconds: the call inside
    /// `ncclGroupStart`/`ncclGroupSimulateEnd`, which plans it (algorithm, protocol, channels)
    /// without launching anything. `None` where the library has no `ncclGroupSimulateEnd` or
    /// gives no estimate (a world of one). Collective like the call: every member simulates
    /// the same calls in the same order, since planning may connect peers.
    ///
    /// `None` without asking NCCL for the point-to-point ops: its estimate comes from the
    /// collectives' cost model only (nothing sets `estimatedTime` for sends and receives), and
    /// a simulated group of them would mark their peer connections as requested while skipping
    /// the connection itself (NCCL 2.22 to 2.30, `groupLaunch`), which the real calls need.
    ///
    /// # Safety
    /// As [`Nccl::enqueue`].
    pub unsafe fn estimate(
        &self,
        comm: &RawComm,
        e: &Enqueue,
        stream: sys::cudaStream_t,
    ) -> Result<Option<f64>, NcclError> {
        if e.op.nccl_point_to_point() {
            return Ok(None);
        }
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
