//! The embedded host backend: one OS process per rank, collectives over shared memory.
//!
//! Layers, bottom up: [`segment`] (the memfd all ranks map), [`layout`] (where control words,
//! channels and sample areas sit), [`wait`] (spin, yield, then futex), [`transport`]
//! (point-to-point byte streams), [`reduce`] (element-wise kernels), [`algo`] (ring and tree
//! collectives written once against the transport).

pub mod affinity;
pub mod algo;
pub mod compute;
pub mod layout;
pub mod reduce;
pub mod segment;
pub mod transport;
pub mod wait;

use algo::{Buffers, Elements, Group};
use transport::Transport;

use crate::collective::uneven::RankCounts;
use crate::collective::{Algo, Op, ReduceOp, Semantics};
use crate::error::{Error, Result};
use crate::model::call::Call;

/// Runs one collective call of this rank on the host backend. `scratch` is reused between calls
/// so that timed iterations never allocate. `uneven` holds this rank's counts of an AllToAllV.
pub fn run<T: Transport>(
    t: &mut T,
    g: &Group,
    (call, uneven): (&Call, Option<&RankCounts>),
    bufs: Buffers<'_>,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let e = Elements {
        dtype: call.dtype,
        redop: call.redop,
    };
    let mut bufs = bufs;
    match (call.op.semantics(), uneven) {
        (Semantics::AllToAllV, Some(counts)) => {
            let counts = (counts, call.dtype.size());
            algo::pairwise::alltoallv(t, g, bufs.reborrow(), counts, scratch)?
        }
        (Semantics::AllToAllV, None) => {
            return Err(Error::usage(
                "alltoallv needs its traffic's per-peer counts",
            ))
        }
        _ => dispatch(t, g, call, bufs.reborrow(), scratch, e)?,
    }
    if call.redop == ReduceOp::Avg {
        if let Some(result) = reduced_result(call, g, bufs) {
            reduce::finish_avg(call.dtype, g.size(), result);
        }
    }
    Ok(())
}

/// Where this rank holds the complete reduction of a call that reduces: all of the output
/// (AllReduce; Reduce at the root), or its own block (ReduceScatter: the output, or in place
/// its block of the one buffer); `None` where it holds none.
fn reduced_result<'a>(call: &Call, g: &Group, bufs: Buffers<'a>) -> Option<&'a mut [u8]> {
    let block = call.shape.count_per_rank * call.dtype.size();
    let whole = call.shape.count * call.dtype.size();
    let (output, in_place) = match bufs {
        Buffers::OutOfPlace { output, .. } => (output, false),
        Buffers::InPlace(buf) => (buf, true),
    };
    match call.op.semantics() {
        Semantics::AllReduce => output.get_mut(..whole),
        Semantics::Reduce if g.me == call.root => output.get_mut(..whole),
        Semantics::ReduceScatter if in_place => output.get_mut(g.me * block..(g.me + 1) * block),
        Semantics::ReduceScatter => output.get_mut(..block),
        _ => None,
    }
}

/// How a Gather or Scatter call runs: its root, block and schedule.
fn rooted(call: &Call) -> algo::rooted::Rooted {
    let schedule = match call.algo {
        Algo::Linear => algo::rooted::Schedule::Linear,
        _ => algo::rooted::Schedule::Binomial,
    };
    algo::rooted::Rooted {
        root: call.root,
        block_bytes: call.shape.count_per_rank * call.dtype.size(),
        schedule,
    }
}

fn dispatch<T: Transport>(
    t: &mut T,
    g: &Group,
    call: &Call,
    bufs: Buffers<'_>,
    scratch: &mut Vec<u8>,
    e: Elements,
) -> Result<()> {
    let (shape, algo) = (&call.shape, call.algo);
    let (cpr, root) = (shape.count_per_rank, call.root);
    let none = || {
        Err(Error::usage(format!(
            "the host backend has no {algo} algorithm for {}",
            call.op
        )))
    };
    match call.op {
        Op::AllReduce => match algo {
            Algo::Ring => algo::ring::allreduce(t, g, bufs, shape.count, e),
            Algo::Tree => algo::tree::allreduce(t, g, bufs, e),
            Algo::RecursiveDoubling => algo::doubling::allreduce(t, g, bufs, e, scratch),
            _ => none(),
        },
        Op::AllGather => match algo {
            Algo::Ring => algo::ring::allgather(t, g, bufs, cpr, e),
            _ => none(),
        },
        Op::Hypercube => match algo {
            Algo::RecursiveDoubling => algo::doubling::allgather(t, g, bufs, cpr, e),
            _ => none(),
        },
        Op::ReduceScatter => match algo {
            Algo::Ring => algo::ring::reducescatter(t, g, bufs, cpr, e, scratch),
            _ => none(),
        },
        Op::Broadcast => match algo {
            Algo::Tree => algo::tree::broadcast(t, g, root, bufs),
            _ => none(),
        },
        Op::Reduce => match algo {
            Algo::Tree => algo::tree::reduce(t, g, root, bufs, e),
            _ => none(),
        },
        Op::Gather => match algo {
            Algo::Linear | Algo::Binomial => {
                algo::rooted::gather(t, g, bufs, rooted(call), scratch)
            }
            _ => none(),
        },
        Op::Scatter => match algo {
            Algo::Linear | Algo::Binomial => {
                algo::rooted::scatter(t, g, bufs, rooted(call), scratch)
            }
            _ => none(),
        },
        Op::SendRecv => match algo {
            Algo::Direct => algo::pairwise::sendrecv(t, g, bufs, scratch),
            _ => none(),
        },
        // Run above, with its counts.
        Op::AllToAllV => none(),
        Op::AllToAll => match algo {
            Algo::Pairwise | Algo::Linear => {
                let linear = algo == Algo::Linear;
                algo::pairwise::alltoall(t, g, bufs, (cpr, e), scratch, linear)
            }
            Algo::Bruck => algo::bruck::alltoall(t, g, bufs, cpr, e, scratch),
            _ => none(),
        },
    }
}
