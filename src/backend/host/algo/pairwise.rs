//! Pairwise exchange AllToAll: block j of rank r's input goes to rank j, landing in block r of
//! its output. In step k (1..p) rank r sends its block for r+k and receives the block of r-k,
//! so every step is a permutation of the ranks and no rank waits on two senders at once: p-1
//! steps of S/p bytes, the bandwidth-optimal schedule for large blocks (Thakur, Rabenseifner &
//! Gropp 2005, section 4.4). SendRecv is the one-step case every rank of a ring takes at once.

use super::{Buffers, Elements, Group};
use crate::backend::host::transport::{Combine, Many, Transport};
use crate::error::Result;

/// Pairwise AllToAll of `count_per_rank` elements per block. In place, the input is first
/// copied to `scratch` ([`Buffers::separate`]), since a block may be overwritten before it is
/// sent.
pub fn alltoall<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    count_per_rank: usize,
    e: Elements,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (input, output) = bufs.separate(scratch);
    let (n, me) = (g.size(), g.me);
    let b = count_per_rank * e.dtype.size();
    let blk = |j: usize| j * b..(j + 1) * b;
    output[blk(me)].copy_from_slice(&input[blk(me)]);
    for k in 1..n {
        let (to, from) = ((me + k) % n, (me + n - k) % n);
        let out = &mut output[blk(from)];
        t.send_recv_copy(
            Some((g.members[to], &input[blk(to)])),
            Some((g.members[from], out, Combine::Copy)),
        )?;
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

/// Linear AllToAll (Open MPI's `linear`, coll_tuned alltoall 1): every block offered to its
/// peer at once and each peer's block taken as soon as it is there
/// ([`Transport::exchange_all`]), so no rank waits for one partner per step; on a transport
/// that moves one pair at a time, message i goes to r+1+i while the one from r-1-i comes in:
/// the pairwise schedule. In place, the input is first copied to `scratch`.
pub fn alltoall_linear<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    count_per_rank: usize,
    e: Elements,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (input, output) = bufs.separate(scratch);
    let (n, me) = (g.size(), g.me);
    let b = count_per_rank * e.dtype.size();
    let blk = |j: usize| j * b..(j + 1) * b;
    output[blk(me)].copy_from_slice(&input[blk(me)]);
    let to = |i: usize| {
        let j = (me + 1 + i) % n;
        (g.members[j], blk(j))
    };
    let from = |i: usize| {
        let j = (me + n - 1 - i) % n;
        (g.members[j], blk(j))
    };
    let sends = Many {
        count: n - 1,
        at: &to,
        buf: input,
    };
    let recvs = Many {
        count: n - 1,
        at: &from,
        buf: output,
    };
    t.exchange_all(sends, recvs)
}
