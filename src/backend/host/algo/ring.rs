//! Ring algorithms: every rank sends to its right neighbour and receives from its left, p-1 steps
//! per phase, each step moving one block of S/p bytes. Bandwidth-optimal: each rank sends
//! (p-1)/p × S per phase, which is exactly the busbw factor's assumption.

use std::ops::Range;

use super::{block, split_pair, Buffers, Elements, Group};
use crate::backend::host::transport::{Combine, Transport};
use crate::error::Result;

/// Elements per rank in one slice of a large AllReduce (see `allreduce`).
fn slice_elems(e: Elements) -> usize {
    (256 * 1024) / e.dtype.size()
}

/// Ring AllReduce of `count` elements: ReduceScatter then AllGather over p blocks. A large
/// buffer is reduced slice by slice (p × 256 KiB at a time) so that each slice stays in cache
/// through all 2(p-1) steps: memory is then read and written once, instead of once per step.
pub fn allreduce<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    count: usize,
    e: Elements,
) -> Result<()> {
    let per_slice = slice_elems(e) * g.size();
    if count <= per_slice {
        return allreduce_slice(t, g, bufs, count, e);
    }
    let el = e.dtype.size();
    let slices = (0..count)
        .step_by(per_slice)
        .map(|s| s * el..(s + per_slice).min(count) * el);
    match bufs {
        Buffers::OutOfPlace { input, output } => {
            for r in slices {
                let n = r.len() / el;
                let b = Buffers::OutOfPlace {
                    input: &input[r.clone()],
                    output: &mut output[r],
                };
                allreduce_slice(t, g, b, n, e)?;
            }
        }
        Buffers::InPlace(buf) => {
            for r in slices {
                let n = r.len() / el;
                allreduce_slice(t, g, Buffers::InPlace(&mut buf[r]), n, e)?;
            }
        }
    }
    Ok(())
}

/// One ring AllReduce over the whole of `bufs`.
fn allreduce_slice<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    count: usize,
    e: Elements,
) -> Result<()> {
    let (src, work) = match bufs {
        Buffers::OutOfPlace { input, output } => (Some(input), output),
        Buffers::InPlace(buf) => (None, buf),
    };
    let n = g.size();
    let el = e.dtype.size();
    if n == 1 {
        if let Some(src) = src {
            work.copy_from_slice(src);
        }
        return Ok(());
    }
    let me = g.me as isize;
    let (right, left) = (g.peer(me + 1), g.peer(me - 1));
    let blk = |k: isize| block(count, n, k.rem_euclid(n as isize) as usize, el);
    for s in 0..n as isize - 1 {
        let (sb, rb) = (blk(me - s), blk(me - s - 1));
        match src {
            Some(src) => {
                let local = &src[rb.clone()];
                let how = Combine::ReduceWith {
                    dtype: e.dtype,
                    op: e.redop,
                    local,
                };
                if s == 0 {
                    t.send_recv(Some((right, &src[sb])), Some((left, &mut work[rb], how)))?;
                } else {
                    let (out, inp) = split_pair(work, sb, rb);
                    t.send_recv(Some((right, out)), Some((left, inp, how)))?;
                }
            }
            None => {
                let how = Combine::Reduce {
                    dtype: e.dtype,
                    op: e.redop,
                };
                let (out, inp) = split_pair(work, sb, rb);
                t.send_recv(Some((right, out)), Some((left, inp, how)))?;
            }
        }
    }
    gather_steps(t, g, work, blk, me + 1, n - 1)
}

/// The AllGather phase: `steps` steps starting by sending block `first`, copying what arrives
/// (so large blocks may move single-copy, see `Transport::send_recv_copy`).
fn gather_steps<T: Transport>(
    t: &mut T,
    g: &Group,
    work: &mut [u8],
    blk: impl Fn(isize) -> Range<usize>,
    first: isize,
    steps: usize,
) -> Result<()> {
    let me = g.me as isize;
    let (right, left) = (g.peer(me + 1), g.peer(me - 1));
    for s in 0..steps as isize {
        let (out, inp) = split_pair(work, blk(first - s), blk(first - s - 1));
        t.send_recv_copy(Some((right, out)), Some((left, inp, Combine::Copy)))?;
    }
    Ok(())
}

/// Byte range of block `k` (mod p) of a buffer of p blocks of `stride` bytes, restricted to the
/// slice `off..off + len` of each block.
fn strided(n: usize, stride: usize, off: usize, len: usize) -> impl Fn(isize) -> Range<usize> {
    move |k: isize| {
        let at = k.rem_euclid(n as isize) as usize * stride + off;
        at..at + len
    }
}

/// The slices `(offset, length)` a block of `bytes` is worked through, `step` bytes at a time
/// (at least one slice, so that empty calls still synchronise).
fn slices(bytes: usize, step: usize) -> impl Iterator<Item = (usize, usize)> {
    let step = step.max(1);
    let count = bytes.div_ceil(step).max(1);
    (0..count).map(move |i| (i * step, bytes.saturating_sub(i * step).min(step)))
}

/// The slice length of a ring that forwards what it receives: 256 KiB, so that what one step
/// receives is still in cache when the next step forwards it.
fn forward_step(e: Elements) -> usize {
    slice_elems(e) * e.dtype.size()
}

/// Ring AllGather: each rank's `count_per_rank` elements end up in block `rank` of every output.
/// Large blocks travel slice by slice (see [`forward_step`]) where more than two ranks forward
/// them; two ranks forward nothing and exchange each block as one message. Out of place, the first step sends
/// straight from the input and the rank's own block is copied into the output last: the peer
/// reads the input while this rank receives, instead of waiting for the copy.
pub fn allgather<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    count_per_rank: usize,
    e: Elements,
) -> Result<()> {
    let n = g.size();
    let bytes = count_per_rank * e.dtype.size();
    let me = g.me as isize;
    let (input, work) = match bufs {
        Buffers::OutOfPlace { input, output } => (Some(input), output),
        Buffers::InPlace(buf) => (None, buf),
    };
    let step = if n > 2 { forward_step(e) } else { bytes };
    for (off, len) in slices(bytes, step) {
        let blk = strided(n, bytes, off, len);
        match input {
            Some(input) if n > 1 => {
                let (right, left) = (g.peer(me + 1), g.peer(me - 1));
                let first = Some((right, &input[off..off + len]));
                t.send_recv_copy(first, Some((left, &mut work[blk(me - 1)], Combine::Copy)))?;
                gather_steps(t, g, work, &blk, me - 1, n - 2)?;
            }
            _ => gather_steps(t, g, work, &blk, me, n - 1)?,
        }
    }
    if let Some(input) = input {
        work[strided(n, bytes, 0, bytes)(me)].copy_from_slice(input);
    }
    Ok(())
}

/// Ring ReduceScatter: rank r receives the reduction of block r of every input. Partial sums
/// travel round the ring through two alternating scratch blocks; the last step reduces straight
/// into the output. Large blocks are worked through slice by slice (see [`slices`]), so the
/// partial sums stay in cache.
pub fn reducescatter<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    count_per_rank: usize,
    e: Elements,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let n = g.size();
    let bytes = count_per_rank * e.dtype.size();
    let me = g.me as isize;
    let (right, left) = (g.peer(me + 1), g.peer(me - 1));
    scratch.resize(2 * bytes.min(slice_elems(e) * e.dtype.size()), 0);
    match bufs {
        Buffers::OutOfPlace { input, output } => {
            if n == 1 {
                output.copy_from_slice(input);
                return Ok(());
            }
            for (off, len) in slices(bytes, forward_step(e)) {
                let blk = strided(n, bytes, off, len);
                partial_steps(t, g, input, &blk, e, &mut scratch[..2 * len])?;
                let how = Combine::ReduceWith {
                    dtype: e.dtype,
                    op: e.redop,
                    local: &input[blk(me)],
                };
                let out = last_partial(n, input, &scratch[..2 * len], blk(me - 1));
                let dst = &mut output[off..off + len];
                t.send_recv(Some((right, out)), Some((left, dst, how)))?;
            }
            Ok(())
        }
        Buffers::InPlace(buf) => {
            if n == 1 {
                return Ok(());
            }
            let how = Combine::Reduce {
                dtype: e.dtype,
                op: e.redop,
            };
            for (off, len) in slices(bytes, forward_step(e)) {
                let blk = strided(n, bytes, off, len);
                partial_steps(t, g, buf, &blk, e, &mut scratch[..2 * len])?;
                if n == 2 {
                    let (out, inp) = split_pair(buf, blk(me - 1), blk(me));
                    t.send_recv(Some((right, out)), Some((left, inp, how)))?;
                    continue;
                }
                let out = last_partial(n, &[], &scratch[..2 * len], 0..0);
                t.send_recv(Some((right, out)), Some((left, &mut buf[blk(me)], how)))?;
            }
            Ok(())
        }
    }
}

/// Steps 0..p-2 of ReduceScatter on one slice: step s receives the partial of block (me-s-2) and
/// adds this rank's own contribution; step 0 sends the rank's raw block (me-1). `scratch` holds
/// two slices.
fn partial_steps<T: Transport>(
    t: &mut T,
    g: &Group,
    input: &[u8],
    blk: &impl Fn(isize) -> Range<usize>,
    e: Elements,
    scratch: &mut [u8],
) -> Result<()> {
    let n = g.size() as isize;
    let me = g.me as isize;
    let (right, left) = (g.peer(me + 1), g.peer(me - 1));
    let half = scratch.len() / 2;
    for s in 0..n - 2 {
        let (lo, hi) = scratch.split_at_mut(half);
        let (prev, cur) = if s % 2 == 0 { (&*hi, lo) } else { (&*lo, hi) };
        let out = if s == 0 { &input[blk(me - 1)] } else { prev };
        let how = Combine::ReduceWith {
            dtype: e.dtype,
            op: e.redop,
            local: &input[blk(me - s - 2)],
        };
        t.send_recv(Some((right, out)), Some((left, cur, how)))?;
    }
    Ok(())
}

/// What the last ReduceScatter step sends: the newest partial, or the raw block when p == 2.
fn last_partial<'a>(n: usize, input: &'a [u8], scratch: &'a [u8], raw: Range<usize>) -> &'a [u8] {
    if n == 2 {
        return &input[raw];
    }
    // Step n-3 wrote the low half when n-3 is even.
    let half = scratch.len() / 2;
    if (n - 3) % 2 == 0 {
        &scratch[..half]
    } else {
        &scratch[half..]
    }
}
