//! Recursive doubling: in round k every rank swaps its whole buffer with the rank whose group
//! index differs in bit k and reduces. log2(p) rounds instead of the ring's 2(p-1) steps, at the
//! price of moving the whole buffer each round: the latency algorithm for small messages.
//! A group that is not a power of two first folds its extra ranks into the lower ones and hands
//! them the result at the end.
//!
//! The AllGather of the same shape (nccl-tests' hypercube): in round k a rank swaps the 2^k
//! blocks it holds with the rank whose index differs in bit k, so the blocks held double each
//! round; log2(p) rounds, (p-1)/p of S received in all.

use super::{split_pair, Buffers, Elements, Group};
use crate::backend::host::reduce::{reduce3, reduce_into};
use crate::backend::host::transport::{Combine, Transport};
use crate::error::{Error, Result};

/// Recursive-doubling AllReduce; `scratch` receives each partner's buffer.
pub fn allreduce<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    e: Elements,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (mut src, work) = match bufs {
        Buffers::OutOfPlace { input, output } => (Some(input), output),
        Buffers::InPlace(buf) => (None, buf),
    };
    let (n, me) = (g.size(), g.me);
    let pof2 = 1usize << n.ilog2();
    if me >= pof2 {
        // An extra rank: give its data to its partner below, take the result back.
        let partner = g.members[me - pof2];
        t.send(partner, src.unwrap_or(work))?;
        return t.recv(partner, work, Combine::Copy);
    }
    if me + pof2 < n {
        let extra = g.members[me + pof2];
        let how = match src.take() {
            Some(local) => Combine::ReduceWith {
                dtype: e.dtype,
                op: e.redop,
                local,
            },
            None => Combine::Reduce {
                dtype: e.dtype,
                op: e.redop,
            },
        };
        t.recv(extra, work, how)?;
    }
    scratch.resize(work.len(), 0);
    let mut mask = 1;
    while mask < pof2 {
        let partner = g.members[me ^ mask];
        let mine: &[u8] = src.unwrap_or(work);
        t.send_recv(
            Some((partner, mine)),
            Some((partner, &mut scratch[..], Combine::Copy)),
        )?;
        // a + b == b + a exactly in IEEE arithmetic, so both partners hold identical bits.
        match src.take() {
            Some(local) => reduce3(e.dtype, e.redop, work, local, scratch),
            None => reduce_into(e.dtype, e.redop, work, scratch),
        }
        mask <<= 1;
    }
    if n == 1 {
        if let Some(local) = src {
            work.copy_from_slice(local);
        }
    }
    if me + pof2 < n {
        t.send(g.members[me + pof2], work)?;
    }
    Ok(())
}

/// Recursive-doubling AllGather (nccl-tests' hypercube) of `count_per_rank` elements per rank
/// over a power-of-two group: rank r's block ends up in block r of every output.
pub fn allgather<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    count_per_rank: usize,
    e: Elements,
) -> Result<()> {
    let (n, me) = (g.size(), g.me);
    if !n.is_power_of_two() {
        return Err(Error::usage(format!(
            "a hypercube exchange needs a power-of-two group, not {n} ranks"
        )));
    }
    let bytes = count_per_rank * e.dtype.size();
    let work = match bufs {
        Buffers::OutOfPlace { input, output } => {
            output[me * bytes..(me + 1) * bytes].copy_from_slice(input);
            output
        }
        Buffers::InPlace(buf) => buf,
    };
    let mut mask = 1;
    while mask < n {
        // This rank holds the run of `mask` blocks from `held`; its partner the run from `got`.
        let held = me & !(mask - 1);
        let got = held ^ mask;
        let partner = g.members[me ^ mask];
        let run = |first: usize| first * bytes..(first + mask) * bytes;
        let (out, inp) = split_pair(work, run(held), run(got));
        t.send_recv_copy(Some((partner, out)), Some((partner, inp, Combine::Copy)))?;
        mask <<= 1;
    }
    Ok(())
}
