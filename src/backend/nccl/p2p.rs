//! The ops NCCL runs as grouped point-to-point calls (AllToAll, AllToAllV, SendRecv, Gather,
//! Scatter), as
//! plain data: the
//! list of `ncclSend`/`ncclRecv` calls one rank makes, in order, each with its peer, where its
//! data lies in the send or receive buffer and its count, following nccl-tests (`alltoall.cu`
//! and `sendrecv.cu` of its `src/`). [`super::calls`] issues a list between `ncclGroupStart`
//! and `ncclGroupEnd`; nothing here touches the library, so the arithmetic is tested without a
//! GPU.
//!
//! Each op is one row of [`transfers`]; a rooted op is two more rows of the same list (a gather:
//! every rank a send of its block to the root, the root one receive per rank into that rank's
//! block; a scatter the other way round).

use super::enqueue::Enqueue;
use crate::collective::uneven::RankCounts;
use crate::collective::Semantics;

/// Which way one call moves data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// `ncclSend` from the send buffer.
    Send,
    /// `ncclRecv` into the receive buffer.
    Recv,
}

/// One `ncclSend` or `ncclRecv` of a grouped call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub dir: Dir,
    /// The rank sent to or received from (an index in the communicator).
    pub peer: usize,
    /// Where the data starts, in bytes from the start of the send buffer (a send) or of the
    /// receive buffer (a receive).
    pub offset: usize,
    /// Elements of the call's dtype.
    pub count: usize,
}

impl Transfer {
    /// The device address the call passes: `offset` bytes into `e`'s send or receive buffer.
    pub fn address(&self, e: &Enqueue) -> u64 {
        let base = match self.dir {
            Dir::Send => e.send,
            Dir::Recv => e.recv,
        };
        base + self.offset as u64
    }
}

/// The calls rank `e.rank` of `e.nranks` makes for `e.op`, in the order it makes them; `None`
/// for the ops NCCL runs as one collective. `e.count` is the per-op table's count
/// ([`Shape::call_count`](crate::collective::Shape::call_count)): elements per peer for
/// AllToAll, the whole buffer for SendRecv.
///
/// * AllToAll: for every rank `r` in order, a send of block `r` of the send buffer to `r` and a
///   receive from `r` into block `r` of the receive buffer (a block is `count` elements; the
///   rank's own block goes to itself).
/// * SendRecv: the whole send buffer to `rank + 1`, the whole receive buffer from `rank − 1`
///   (modulo the ranks; a world of one sends to and receives from itself).
///
/// * Gather (root `e.root`): a send of the whole send buffer (`count` elements) to the root;
///   the root also receives from every rank `r` into block `r` of the receive buffer
///   (nccl-tests' `gather.cu` before `ncclGather` of NCCL 2.28).
/// * Scatter: the root sends block `r` of its send buffer to every rank `r`; every rank
///   receives `count` elements from the root (nccl-tests' `scatter.cu`).
///
/// In place nccl-tests passes one buffer as both and offsets 0, so the same list applies with
/// `e.send == e.recv`; the NCCL backend plans no such point
/// ([`crate::collective::Op::nccl_no_in_place`]), since the result is then undefined.
pub fn transfers(e: &Enqueue) -> Option<Vec<Transfer>> {
    let n = e.nranks.max(1);
    let (me, count) = (e.rank % n, e.count);
    let block = count * e.dtype.size();
    let call = |dir, peer, offset| Transfer {
        dir,
        peer,
        offset,
        count,
    };
    match e.op.semantics() {
        Semantics::AllToAll => Some(
            (0..n)
                .flat_map(|r| [call(Dir::Send, r, r * block), call(Dir::Recv, r, r * block)])
                .collect(),
        ),
        Semantics::SendRecv => Some(vec![
            call(Dir::Send, (me + 1) % n, 0),
            call(Dir::Recv, (me + n - 1) % n, 0),
        ]),
        // Every rank sends its block to the root; the root receives rank r's into block r.
        Semantics::Gather => {
            let root = usize::try_from(e.root).unwrap_or(0) % n;
            let mut v = vec![call(Dir::Send, root, 0)];
            if me == root {
                v.extend((0..n).map(|r| call(Dir::Recv, r, r * block)));
            }
            Some(v)
        }
        // The root sends block r to rank r; every rank receives its block from the root.
        Semantics::Scatter => {
            let root = usize::try_from(e.root).unwrap_or(0) % n;
            let mut v = Vec::new();
            if me == root {
                v.extend((0..n).map(|r| call(Dir::Send, r, r * block)));
            }
            v.push(call(Dir::Recv, root, 0));
            Some(v)
        }
        // Each pair's own count: [`uneven_transfers`] from the point's traffic.
        Semantics::AllToAllV
        | Semantics::AllReduce
        | Semantics::AllGather
        | Semantics::ReduceScatter
        | Semantics::Broadcast
        | Semantics::Reduce => None,
    }
}

/// The calls of one rank's AllToAllV, as nccl-tests' alltoallv.cu makes them: for every rank
/// `r` in order, a send of this rank's elements for `r` (packed in peer order in the send
/// buffer) and a receive of `r`'s elements (packed in source order in the receive buffer),
/// each left out where its count is 0. Offsets in bytes of `el`-byte elements.
pub fn uneven_transfers(counts: &RankCounts, el: usize) -> Vec<Transfer> {
    let call = |dir, peer, (at, count): (usize, usize)| Transfer {
        dir,
        peer,
        offset: at * el,
        count,
    };
    let sends = counts.send_displ.iter().zip(&counts.send);
    let recvs = counts.recv_displ.iter().zip(&counts.recv);
    (sends.zip(recvs).enumerate())
        .flat_map(|(r, ((&sd, &sc), (&rd, &rc)))| {
            let send = (sc > 0).then(|| call(Dir::Send, r, (sd, sc)));
            let recv = (rc > 0).then(|| call(Dir::Recv, r, (rd, rc)));
            send.into_iter().chain(recv)
        })
        .collect()
}

#[cfg(test)]
#[path = "p2p_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "p2p_uneven_tests.rs"]
mod uneven_tests;
