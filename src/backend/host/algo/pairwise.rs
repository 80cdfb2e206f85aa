//! Pairwise exchange AllToAll: block j of rank r's input goes to rank j, landing in block r of
//! its output. In step k (1..p) rank r sends its block for r+k and receives the block of r-k,
//! so every step is a permutation of the ranks and no rank waits on two senders at once: p-1
//! steps of S/p bytes, the bandwidth-optimal schedule for large blocks (Thakur, Rabenseifner &
//! Gropp 2005, section 4.4). The linear AllToAll sends the same blocks with every one in flight
//! at once. SendRecv is the one-step case every rank of a ring takes at once.

use super::{Buffers, Elements, Group};
use crate::backend::host::transport::{Combine, Many, Transport};
use crate::collective::uneven::RankCounts;
use crate::error::Result;

/// AllToAll of `count_per_rank` elements per block: the pairwise exchange, or with `linear` every
/// block in flight at once (Open MPI's `linear`, coll_tuned alltoall 1: each block offered to its
/// peer at the start and each peer's block taken as soon as it is there,
/// [`Transport::exchange_all`], so no rank waits for one partner per step; on a transport that
/// moves one pair at a time, message i goes to r+1+i while the one from r-1-i comes in, the
/// pairwise schedule). In place, the input is first copied to `scratch`
/// ([`Buffers::separate`]), since a block may be overwritten before it is sent.
pub fn alltoall<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    (count_per_rank, e): (usize, Elements),
    scratch: &mut Vec<u8>,
    linear: bool,
) -> Result<()> {
    let (input, output) = bufs.separate(scratch);
    let (n, me) = (g.size(), g.me);
    let b = count_per_rank * e.dtype.size();
    let blk = |j: usize| j * b..(j + 1) * b;
    output[blk(me)].copy_from_slice(&input[blk(me)]);
    // Step k = i + 1: to r+k, from r-k.
    let to = |i: usize| (me + 1 + i) % n;
    let from = |i: usize| (me + n - 1 - i) % n;
    if linear {
        let (sends, recvs) = (
            |i: usize| (g.members[to(i)], blk(to(i))),
            |i: usize| (g.members[from(i)], blk(from(i))),
        );
        return t.exchange_all(
            Many {
                count: n - 1,
                at: &sends,
                buf: input,
            },
            Many {
                count: n - 1,
                at: &recvs,
                buf: output,
            },
        );
    }
    for i in 0..n - 1 {
        let (to, from) = (to(i), from(i));
        t.send_recv_copy(
            Some((g.members[to], &input[blk(to)])),
            Some((g.members[from], &mut output[blk(from)], Combine::Copy)),
        )?;
    }
    Ok(())
}

/// AllToAllV by pairwise exchange: in step k rank r sends its elements for r+k and receives
/// those of r-k, each block of its pair's own size, packed in rank order in the input and the
/// output (`counts`, in elements of `el` bytes); an empty block is neither sent nor awaited
/// (its peer's counts say the same). In place, the input is first copied to `scratch`.
pub fn alltoallv<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    (counts, el): (&RankCounts, usize),
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (input, output) = bufs.separate(scratch);
    let (n, me) = (g.size(), g.me);
    let sent = |j: usize| counts.send_displ[j] * el..(counts.send_displ[j] + counts.send[j]) * el;
    let got = |j: usize| counts.recv_displ[j] * el..(counts.recv_displ[j] + counts.recv[j]) * el;
    output[got(me)].copy_from_slice(&input[sent(me)]);
    for k in 1..n {
        let (to, from) = ((me + k) % n, (me + n - k) % n);
        let send = (counts.send[to] > 0).then(|| (g.members[to], &input[sent(to)]));
        let recv = (counts.recv[from] > 0)
            .then(|| (g.members[from], &mut output[got(from)], Combine::Copy));
        if send.is_some() || recv.is_some() {
            t.send_recv_copy(send, recv)?;
        }
    }
    Ok(())
}

/// SendRecv as nccl-tests measures it: rank r sends its whole buffer to r+1 and receives the
/// buffer of r-1, at the same time. In place, the buffer is first copied to `scratch`
/// ([`Buffers::separate`]), since the incoming message may overwrite bytes not yet sent.
pub fn sendrecv<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (input, output) = bufs.separate(scratch);
    if g.size() == 1 {
        output.copy_from_slice(input);
        return Ok(());
    }
    let (next, prev) = (g.peer(g.me as isize + 1), g.peer(g.me as isize - 1));
    t.send_recv_copy(Some((next, input)), Some((prev, output, Combine::Copy)))
}
