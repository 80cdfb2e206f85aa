//! Binary-tree algorithms over the group seen from its root ([`FromRoot`]; AllReduce roots at
//! group index 0): Reduce flows up the tree, Broadcast flows down, AllReduce is Reduce then
//! Broadcast. Messages are cut into chunks so that the levels of
//! the tree work on different chunks at once (pipelining); latency grows with log2(p) levels
//! instead of the ring's p-1 steps.
//!
//! A large Broadcast (from 1 MiB) runs as a pipelined chain instead, the schedule Open MPI's
//! tuned component also picks for large broadcasts: the binary tree's root and inner ranks send
//! S to each of two children, where in the chain no rank sends more than S, and each chunk is a
//! message the receiver copies as it is, so the shared-memory transport moves it single-copy.
//! Both have the bandwidth term S once pipelined; the chain's p−1 steps of latency are paid
//! only where a chunk's latency is a small part of the time.

use std::ops::Range;

use super::{split_pair, Buffers, Elements, FromRoot, Group};
use crate::backend::host::transport::{Combine, Many, Transport};
use crate::error::Result;

/// Pipeline chunk; a multiple of every element size.
const CHUNK: usize = 64 * 1024;

/// From this many bytes up, Broadcast runs as a pipelined chain (see [`chain_down`]).
const CHAIN_MIN: usize = 1 << 20;

/// The chain's pipeline chunk: a 16th of the message, so that filling the pipeline (p−2
/// chunks) is a small part of the time, but at least the smallest single-copy message and at
/// most 1 MiB (from there a chunk's hand-over, a descriptor and its release, is a negligible
/// part of its copy).
const CHAIN_CHUNK: usize = 1 << 20;
const CHAIN_CHUNK_MIN: usize = crate::backend::host::transport::single_copy::AUTO_MIN_BYTES;

/// This rank's parent and children (global ranks) in the binary tree over index `i` of `n`
/// counted from the root; the children as an array and how many of it are real, so a call
/// allocates nothing.
fn links(g: FromRoot) -> (Option<usize>, ([usize; 2], usize)) {
    let (i, n) = (g.me(), g.size());
    let parent = (i > 0).then(|| g.member((i - 1) / 2));
    let mut kids = [0; 2];
    let mut count = 0;
    for c in [2 * i + 1, 2 * i + 2].into_iter().filter(|&c| c < n) {
        kids[count] = g.member(c);
        count += 1;
    }
    (parent, (kids, count))
}

fn chunks(len: usize) -> impl Iterator<Item = Range<usize>> {
    (0..len.div_ceil(CHUNK)).map(move |k| k * CHUNK..((k + 1) * CHUNK).min(len))
}

/// Up the tree: children's data reduced into `work` (plus `src` when out of place), then sent
/// to the parent. A leaf sends its input untouched.
fn reduce_up<T: Transport>(
    t: &mut T,
    g: FromRoot,
    src: Option<&[u8]>,
    work: &mut [u8],
    e: Elements,
) -> Result<()> {
    let (parent, (kids, count)) = links(g);
    let kids = &kids[..count];
    for r in chunks(work.len()) {
        for (k, &kid) in kids.iter().enumerate() {
            let how = match src {
                Some(src) if k == 0 => Combine::ReduceWith {
                    dtype: e.dtype,
                    op: e.redop,
                    local: &src[r.clone()],
                },
                _ => Combine::Reduce {
                    dtype: e.dtype,
                    op: e.redop,
                },
            };
            t.recv(kid, &mut work[r.clone()], how)?;
        }
        if let Some(p) = parent {
            let data = match src {
                Some(src) if kids.is_empty() => &src[r],
                _ => &work[r],
            };
            t.send(p, data)?;
        }
    }
    if parent.is_none() && kids.is_empty() {
        if let Some(src) = src {
            work.copy_from_slice(src);
        }
    }
    Ok(())
}

/// Down the tree: the root's `work` is copied into every rank's `work`.
fn broadcast_down<T: Transport>(t: &mut T, g: FromRoot, work: &mut [u8]) -> Result<()> {
    let (parent, (kids, count)) = links(g);
    let kids = &kids[..count];
    for r in chunks(work.len()) {
        if let Some(p) = parent {
            t.recv(p, &mut work[r.clone()], Combine::Copy)?;
        }
        for &kid in kids {
            t.send(kid, &work[r.clone()])?;
        }
    }
    Ok(())
}

/// Pipelined chain: group index i receives chunk k from i−1 while i+1 receives chunk k−1 from
/// it, so every rank but the root receives S once and every rank but the last forwards S once;
/// once the pipeline is full the time is that of one pass over S, whatever the rank count.
/// Given a separate input `src` (out of place), the root sends from it and copies each piece
/// into `work` while its child reads that piece; the other ranks ignore it.
fn chain_down<T: Transport>(
    t: &mut T,
    g: FromRoot,
    src: Option<&[u8]>,
    work: &mut [u8],
) -> Result<()> {
    let (i, n, len) = (g.me(), g.size(), work.len());
    let chunk = (len / 16).clamp(CHAIN_CHUNK_MIN, CHAIN_CHUNK);
    let parent = (i > 0).then(|| g.member(i - 1));
    let child = (i + 1 < n).then(|| g.member(i + 1));
    let src = src.filter(|_| parent.is_none());
    if let (Some(src), None) = (src, child) {
        // A root alone: nothing to send.
        work.copy_from_slice(src);
    }
    let piece = |k: usize| k * chunk..((k + 1) * chunk).min(len);
    let m = len.div_ceil(chunk);
    for k in 0..=m {
        let fwd = child.filter(|_| k >= 1).map(|c| (c, piece(k - 1)));
        let get = parent.filter(|_| k < m).map(|p| (p, piece(k)));
        match (fwd, get) {
            (Some((c, s)), Some((p, r))) => {
                let (out, inp) = split_pair(work, s, r);
                t.send_recv_copy(Some((c, out)), Some((p, inp, Combine::Copy)))?;
            }
            (Some((c, s)), None) => match src {
                Some(src) => {
                    let at = |_| (c, s.clone());
                    let mut copy = || work[s.clone()].copy_from_slice(&src[s.clone()]);
                    let piece = Many {
                        count: 1,
                        at: &at,
                        buf: src,
                    };
                    t.exchange_all_while(piece, Many::none(), &mut copy)?
                }
                None => t.send_recv_copy(Some((c, &work[s])), None)?,
            },
            (None, Some((p, r))) => {
                t.send_recv_copy(None, Some((p, &mut work[r], Combine::Copy)))?
            }
            (None, None) => {}
        }
    }
    Ok(())
}

fn split(bufs: Buffers<'_>) -> (Option<&[u8]>, &mut [u8]) {
    match bufs {
        Buffers::OutOfPlace { input, output } => (Some(input), output),
        Buffers::InPlace(buf) => (None, buf),
    }
}

/// Tree AllReduce: reduce to the root, then broadcast back.
pub fn allreduce<T: Transport>(t: &mut T, g: &Group, bufs: Buffers<'_>, e: Elements) -> Result<()> {
    let (src, work) = split(bufs);
    let g = FromRoot::new(g, 0);
    reduce_up(t, g, src, work, e)?;
    broadcast_down(t, g, work)
}

/// Tree Reduce to group index `root`; other ranks' outputs hold partial sums afterwards.
pub fn reduce<T: Transport>(
    t: &mut T,
    g: &Group,
    root: usize,
    bufs: Buffers<'_>,
    e: Elements,
) -> Result<()> {
    let (src, work) = split(bufs);
    reduce_up(t, FromRoot::new(g, root), src, work, e)
}

/// Tree Broadcast from group index `root`.
pub fn broadcast<T: Transport>(t: &mut T, g: &Group, root: usize, bufs: Buffers<'_>) -> Result<()> {
    let (src, work) = split(bufs);
    let g = FromRoot::new(g, root);
    if work.len() >= CHAIN_MIN {
        return chain_down(t, g, src, work);
    }
    if let (0, Some(src)) = (g.me(), src) {
        work.copy_from_slice(src);
    }
    broadcast_down(t, g, work)
}
