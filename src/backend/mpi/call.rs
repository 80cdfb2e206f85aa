//! One collective call through the MPI C API on host buffers, and the exact-input fill and check
//! around it (the same patterns and in-place layouts as the host backend, see
//! [`crate::check`]).
//!
//! The calls go through `mpi::ffi` rather than rsmpi's safe API, which has no in-place variants
//! and types only Rust primitives: in place, the send buffer is the library's `MPI_IN_PLACE`
//! (see [`super::raw::InPlace`]); f16 and bf16 travel as 2-byte elements reduced by user
//! operations (see [`super::raw::HalfOps`]).

use std::os::raw::{c_int, c_void};

use mpi::ffi;
use mpi::raw::AsRaw;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::raw::Handles;
use crate::backend::buffers::CallBuffers;
use crate::check::{count_wrong_with, fill_input};
use crate::collective::uneven::RankCounts;
use crate::collective::{Op, ReduceOp, Semantics};
use crate::error::{Error, Result};
use crate::model::plan::Point;

/// The rank's call buffers (see [`CallBuffers`]), with the fill, check and call of a point.
#[derive(Default)]
pub struct MpiBuffers(CallBuffers);

impl MpiBuffers {
    /// Input and output bytes sized for `p`; in place, `output` is the one buffer.
    fn views(&mut self, p: &Point) -> (&mut [u8], &mut [u8]) {
        self.0.views(&p.call.shape, p.in_place)
    }

    /// Clears the output and puts the known input pattern where the call reads its input
    /// ([`CallBuffers::input_region`]).
    pub(super) fn fill(&mut self, p: &Point, size: usize, rank: usize) {
        let c = &p.call;
        self.views(p).1.fill(0);
        let target = self.0.input_region(c.op, &c.shape, p.in_place, rank);
        fill_input(c, size, rank, target);
    }

    /// Counts the wrong elements where the call left this rank's output
    /// ([`CallBuffers::result_region`], NCCL's layout), but for in-place ReduceScatter:
    /// `MPI_Reduce_scatter_block` leaves the rank's block at the start of the buffer, where NCCL
    /// leaves it at the rank's offset. (In-place Scatter's non-roots receive into their block,
    /// as NCCL lays it out; see `RawCall::in_place`.)
    pub(super) fn check(&mut self, p: &Point, (size, rank): (usize, usize), args: &RawCall) -> u64 {
        let c = &p.call;
        let out: &[u8] = if c.op.semantics() == Semantics::ReduceScatter && p.in_place {
            &self.views(p).1[..c.shape.out_bytes]
        } else {
            self.0.result_region(c.op, &c.shape, p.in_place, rank)
        };
        let counts = args.uneven.as_ref().map(|v| &v.counts);
        count_wrong_with(c, (size, rank), counts, out)
    }

    /// The point's call on `comm`, resolved once per point (count, datatype, reduction, peers,
    /// the in-place marker) so that the timed loop only makes the call.
    pub(super) fn prepare(comm: &SimpleCommunicator, p: &Point, h: &Handles) -> Result<RawCall> {
        let c = &p.call;
        let n = c.shape.call_count(c.op);
        let count = c_int::try_from(n).map_err(|_| {
            Error::usage(format!(
                "{}: {n} elements per call is more than MPI's int count takes; use a smaller -e",
                p.describe()
            ))
        })?;
        let in_place = if p.in_place {
            Some(h.in_place()?)
        } else {
            None
        };
        // The calls' root argument; the group has at most c_int ranks, so a root of it fits.
        let root = c_int::try_from(c.root).unwrap_or(c_int::MAX);
        let own_block_bytes = c.shape.count_per_rank * c.dtype.size();
        Ok(RawCall {
            op: c.op,
            count,
            datatype: h.datatype(c.dtype),
            // Ops that do not reduce carry a sum they never apply.
            reduction: h.reduction(
                c.dtype,
                if c.op.reduces() {
                    c.redop
                } else {
                    ReduceOp::Sum
                },
            )?,
            comm: comm.as_raw(),
            root,
            is_root: comm.rank() == root,
            own_offset: usize::try_from(comm.rank()).unwrap_or(0) * own_block_bytes,
            ring: ring_neighbours(comm.rank(), comm.size()),
            in_place,
            uneven: UnevenArgs::of(p, comm.rank())?.map(Box::new),
        })
    }

    /// Runs `args`, prepared for `p`, once.
    pub(super) fn call(&mut self, args: &RawCall, p: &Point) -> Result<()> {
        // SAFETY: a blocking call is done with the buffers when it returns.
        unsafe { self.issue(args, p, Mode::Blocking) }
    }

    /// Starts `args`, prepared for `p`, as a nonblocking call whose request is put in `req`.
    ///
    /// # Safety
    /// These buffers must be neither touched, moved nor freed until the request completes.
    pub(super) unsafe fn start(
        &mut self,
        args: &RawCall,
        p: &Point,
        req: &mut ffi::MPI_Request,
    ) -> Result<()> {
        self.issue(args, p, Mode::Start(req))
    }

    /// # Safety
    /// As [`MpiBuffers::start`] where `mode` starts a call.
    unsafe fn issue(&mut self, args: &RawCall, p: &Point, mode: Mode) -> Result<()> {
        let (input, output) = self.views(p);
        let rc = match args.in_place {
            // `output` holds the whole in-place buffer of the point's shape.
            Some(marker) => args.in_place(marker, output, mode),
            None => {
                if args.op.semantics() == Semantics::Broadcast && args.is_root {
                    // Out of place: the root's input becomes its output, then the root sends it.
                    output.copy_from_slice(input);
                }
                // `input` and `output` hold the point's input and output shapes.
                args.out_of_place(input, output, mode)
            }
        };
        check_rc(rc, p)
    }
}

/// How a call is made: blocking, or started with its request put where the pointer says.
#[derive(Clone, Copy)]
enum Mode {
    Blocking,
    Start(*mut ffi::MPI_Request),
}

fn check_rc(rc: c_int, p: &Point) -> Result<()> {
    if rc == ffi::MPI_SUCCESS as c_int {
        return Ok(());
    }
    Err(Error::Rank(format!(
        "{}: the MPI call failed with error code {rc}",
        p.describe()
    )))
}

/// Everything of one call but its buffers, as the C API takes it.
pub(super) struct RawCall {
    op: Op,
    /// Elements sent or received per rank, as each call's count argument means it.
    count: c_int,
    datatype: ffi::MPI_Datatype,
    /// Used by the reducing ops only.
    reduction: ffi::MPI_Op,
    comm: ffi::MPI_Comm,
    /// The root of the rooted ops (0 for the others).
    root: c_int,
    is_root: bool,
    /// Where this rank's block starts in an in-place Gather or Scatter buffer.
    own_offset: usize,
    /// SendRecv's peers: (the next rank, sent to; the previous rank, received from).
    ring: (c_int, c_int),
    /// The library's `MPI_IN_PLACE` for an in-place point.
    in_place: Option<*const c_void>,
    /// An AllToAllV's counts and displacements.
    uneven: Option<Box<UnevenArgs>>,
}

/// The counts and displacements of one rank's `MPI_Alltoallv`, and the counts they came from.
pub(super) struct UnevenArgs {
    counts: RankCounts,
    send: (Vec<c_int>, Vec<c_int>),
    recv: (Vec<c_int>, Vec<c_int>),
}

impl UnevenArgs {
    /// Rank `rank`'s arguments of `p` where it is an alltoallv; refused where an element
    /// offset passes MPI's int.
    fn of(p: &Point, rank: c_int) -> Result<Option<UnevenArgs>> {
        let Some(counts) = p.rank_counts(usize::try_from(rank).unwrap_or(0)) else {
            return Ok(None);
        };
        let int = |v: &[usize]| -> Result<Vec<c_int>> {
            (v.iter().map(|&x| c_int::try_from(x)))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| {
                    Error::usage(format!(
                        "{}: an element offset is more than MPI's int takes; use a smaller -e",
                        p.describe()
                    ))
                })
        };
        Ok(Some(UnevenArgs {
            send: (int(&counts.send)?, int(&counts.send_displ)?),
            recv: (int(&counts.recv)?, int(&counts.recv_displ)?),
            counts,
        }))
    }
}

/// The next and the previous rank of `rank` in a ring of `size`.
fn ring_neighbours(rank: c_int, size: c_int) -> (c_int, c_int) {
    let size = size.max(1);
    ((rank + 1) % size, (rank + size - 1) % size)
}

impl RawCall {
    /// The call with separate buffers (Broadcast: `output` only, already holding the root's
    /// data). Other ranks' Reduce output is not written.
    ///
    /// # Safety
    /// `input` and `output` must be as long as the op's input and output for `count`.
    unsafe fn out_of_place(&self, input: &[u8], output: &mut [u8], mode: Mode) -> c_int {
        let send = input.as_ptr().cast::<c_void>();
        let recv = output.as_mut_ptr().cast::<c_void>();
        self.run(send, recv, mode)
    }

    /// The call in place on `buffer`, with `marker` (`MPI_IN_PLACE`) as the send buffer where
    /// MPI takes it: every rank for AllReduce, AllGather and ReduceScatter, the root only for
    /// Reduce and Gather (the others send `buffer`, or their block of it); Broadcast has one
    /// buffer anyway. Scatter's root takes the marker as its receive buffer; the other ranks
    /// receive into their block of `buffer`.
    ///
    /// # Safety
    /// `buffer` must be as long as the op's larger buffer for `count`; `marker` must be the
    /// library's `MPI_IN_PLACE`.
    unsafe fn in_place(&self, marker: *const c_void, buffer: &mut [u8], mode: Mode) -> c_int {
        let recv = buffer.as_mut_ptr().cast::<c_void>();
        if let (Semantics::SendRecv, Mode::Start(_)) = (self.op.semantics(), mode) {
            // Started calls are a --concurrent's, which refuses SendRecv.
            return ffi::MPI_ERR_ARG as c_int;
        }
        if self.op.semantics() == Semantics::SendRecv {
            // MPI has no MPI_IN_PLACE for it; its in-place form is MPI_Sendrecv_replace.
            let ((to, from), status) = (self.ring, ffi::RSMPI_STATUS_IGNORE);
            let (n, dt, comm) = (self.count, self.datatype, self.comm);
            return ffi::MPI_Sendrecv_replace(recv, n, dt, to, 0, from, 0, comm, status);
        }
        // Inside the buffer for Gather and Scatter, the only ops that use it (wrapping: for the
        // others the offset may point past the buffer, and is never read).
        let own = recv.wrapping_add(self.own_offset);
        let send = match self.op.semantics() {
            Semantics::Reduce if !self.is_root => recv.cast_const(),
            Semantics::Gather if !self.is_root => own.cast_const(),
            Semantics::Scatter if self.is_root => return self.run(recv, marker.cast_mut(), mode),
            Semantics::Scatter => return self.run(recv, own, mode),
            Semantics::Reduce
            | Semantics::Gather
            | Semantics::AllReduce
            | Semantics::AllGather
            | Semantics::ReduceScatter
            | Semantics::Broadcast
            | Semantics::AllToAll
            | Semantics::AllToAllV
            | Semantics::SendRecv => marker,
        };
        self.run(send, recv, mode)
    }

    /// # Safety
    /// As for [`RawCall::out_of_place`] and [`RawCall::in_place`].
    unsafe fn run(&self, send: *const c_void, recv: *mut c_void, mode: Mode) -> c_int {
        match mode {
            Mode::Blocking => self.blocking(send, recv),
            Mode::Start(req) => self.started(send, recv, req),
        }
    }

    /// # Safety
    /// As for [`RawCall::run`].
    unsafe fn blocking(&self, send: *const c_void, recv: *mut c_void) -> c_int {
        let (n, dt, op, comm) = (self.count, self.datatype, self.reduction, self.comm);
        match self.op.semantics() {
            Semantics::AllReduce => ffi::MPI_Allreduce(send, recv, n, dt, op, comm),
            Semantics::AllGather => ffi::MPI_Allgather(send, n, dt, recv, n, dt, comm),
            Semantics::ReduceScatter => ffi::MPI_Reduce_scatter_block(send, recv, n, dt, op, comm),
            Semantics::Broadcast => ffi::MPI_Bcast(recv, n, dt, self.root, comm),
            Semantics::Reduce => ffi::MPI_Reduce(send, recv, n, dt, op, self.root, comm),
            // `n` elements from (to) every rank.
            Semantics::Gather => ffi::MPI_Gather(send, n, dt, recv, n, dt, self.root, comm),
            Semantics::Scatter => ffi::MPI_Scatter(send, n, dt, recv, n, dt, self.root, comm),
            // `n` elements to and from every rank.
            Semantics::AllToAll => ffi::MPI_Alltoall(send, n, dt, recv, n, dt, comm),
            // Each peer's own count, packed in rank order (never in place: the op's row).
            Semantics::AllToAllV => match &self.uneven {
                Some(v) => {
                    let ((sc, sd), (rc, rd)) = (&v.send, &v.recv);
                    let (sc, sd, rc, rd) = (sc.as_ptr(), sd.as_ptr(), rc.as_ptr(), rd.as_ptr());
                    ffi::MPI_Alltoallv(send, sc, sd, dt, recv, rc, rd, dt, comm)
                }
                None => ffi::MPI_ERR_ARG as c_int,
            },
            Semantics::SendRecv => {
                let ((to, from), status) = (self.ring, ffi::RSMPI_STATUS_IGNORE);
                ffi::MPI_Sendrecv(send, n, dt, to, 0, recv, n, dt, from, 0, comm, status)
            }
        }
    }

    /// The nonblocking form of [`RawCall::blocking`] (MPI-3's `MPI_I*` collectives), its
    /// request put in `req`; SendRecv has none here (a --concurrent refuses it).
    ///
    /// # Safety
    /// As for [`RawCall::run`]; the buffers must outlive the request.
    unsafe fn started(
        &self,
        send: *const c_void,
        recv: *mut c_void,
        req: *mut ffi::MPI_Request,
    ) -> c_int {
        let (n, dt, op, comm) = (self.count, self.datatype, self.reduction, self.comm);
        let root = self.root;
        match self.op.semantics() {
            Semantics::AllReduce => ffi::MPI_Iallreduce(send, recv, n, dt, op, comm, req),
            Semantics::AllGather => ffi::MPI_Iallgather(send, n, dt, recv, n, dt, comm, req),
            Semantics::ReduceScatter => {
                ffi::MPI_Ireduce_scatter_block(send, recv, n, dt, op, comm, req)
            }
            Semantics::Broadcast => ffi::MPI_Ibcast(recv, n, dt, root, comm, req),
            Semantics::Reduce => ffi::MPI_Ireduce(send, recv, n, dt, op, root, comm, req),
            Semantics::Gather => ffi::MPI_Igather(send, n, dt, recv, n, dt, root, comm, req),
            Semantics::Scatter => ffi::MPI_Iscatter(send, n, dt, recv, n, dt, root, comm, req),
            Semantics::AllToAll => ffi::MPI_Ialltoall(send, n, dt, recv, n, dt, comm, req),
            Semantics::AllToAllV => match &self.uneven {
                Some(v) => {
                    let ((sc, sd), (rc, rd)) = (&v.send, &v.recv);
                    let (sc, sd, rc, rd) = (sc.as_ptr(), sd.as_ptr(), rc.as_ptr(), rd.as_ptr());
                    ffi::MPI_Ialltoallv(send, sc, sd, dt, recv, rc, rd, dt, comm, req)
                }
                None => ffi::MPI_ERR_ARG as c_int,
            },
            Semantics::SendRecv => ffi::MPI_ERR_ARG as c_int,
        }
    }
}
