//! Gather and Scatter, linear and binomial, from any root.
//!
//! The algorithms work on the group seen from the root ([`FromRoot`], nothing allocated): index
//! `v` counted from the root is group index `(v + root) % p`, and block `j` of the
//! root's buffer (in group order, as nccl-tests lays it out) is the block of rotated index
//! `(j + p - root) % p`.
//!
//! - Linear: the root exchanges one block with every other rank in turn (Open MPI's
//!   `basic_linear`): p−1 messages at the root, every block crossing one link once.
//! - Binomial: rotated index `v` owns the blocks of `v .. v + min(lowbit(v), p − v)` (its
//!   subtree). Gather: in round k (mask 2^k) a rank whose bit k is set sends its subtree's
//!   blocks to `v − 2^k` and leaves; the others receive the subtree of `v + 2^k`. Scatter runs
//!   the rounds backwards. ceil(log2 p) rounds at the root instead of p−1, the same bytes at the
//!   root (its (p−1)/p of S), and each message of a subtree carries its blocks contiguously, in
//!   rotated order (Thakur, Rabenseifner & Gropp 2005, section 4.3; MPICH's binomial gather and
//!   scatter). Inner ranks stage their subtree in `scratch`.
//!
//! The root reads and writes its buffer where the blocks lie, in group order: a subtree that
//! wraps past group index 0 in the root's buffer travels between the root and its child as two
//! messages, cut where it wraps ([`before_wrap`]), so no root copies or rotates its whole
//! buffer, whichever rank it is.

use std::ops::Range;

use super::{Buffers, FromRoot, Group};
use crate::backend::host::transport::{Combine, Many, Transport};
use crate::collective::ceil_log2;
use crate::error::Result;

/// How a rooted call is carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    Linear,
    Binomial,
}

/// One rooted call: the root's index in the group, the block size and the schedule.
#[derive(Clone, Copy, Debug)]
pub struct Rooted {
    pub root: usize,
    pub block_bytes: usize,
    pub schedule: Schedule,
}

/// The number of blocks in the subtree of rotated index `v` among `n`: all of them for the
/// root, else `min(lowbit(v), n − v)`.
pub fn subtree_blocks(v: usize, n: usize) -> usize {
    if v == 0 {
        n
    } else {
        (1 << v.trailing_zeros()).min(n - v)
    }
}

/// How many of the `blocks` blocks of the subtree of rotated index `v` come before group index
/// 0 in the root's buffer: all of them, unless the subtree wraps past it. Both ends of a message
/// between the root and its child cut it there.
pub fn before_wrap(v: usize, blocks: usize, n: usize, root: usize) -> usize {
    // The rotated index of group index 0 (n: none, from root 0).
    let wrap = n - root % n.max(1);
    if v < wrap && wrap < v + blocks {
        wrap - v
    } else {
        blocks
    }
}

/// Where the subtree of rotated index `v` lies in the root's buffer of `b`-byte blocks: its
/// first part, and the part after the wrap when it has one (see [`before_wrap`]).
fn root_parts(v: usize, blocks: usize, n: usize, root: usize, b: usize) -> Parts {
    let k = before_wrap(v, blocks, n, root);
    let at = (v + root) % n;
    let rest = (k < blocks).then(|| 0..(blocks - k) * b);
    (at * b..(at + k) * b, rest)
}

/// A subtree's place in a buffer: one range, or two where it wraps.
type Parts = (Range<usize>, Option<Range<usize>>);

/// The rotated index of `v`'s parent in the binomial tree (`v` > 0).
fn parent_of(v: usize) -> usize {
    v - (1 << v.trailing_zeros())
}

/// The parts the message between rotated index `v` and its parent is cut into, as byte ranges
/// of `v`'s staged subtree of `blocks` blocks: cut at the wrap where the parent is the root (the
/// other end of [`root_parts`]), whole otherwise.
fn parent_parts(rg: &FromRoot, v: usize, blocks: usize, b: usize) -> Parts {
    let k = match parent_of(v) {
        0 => before_wrap(v, blocks, rg.size(), rg.root()),
        _ => blocks,
    };
    (0..k * b, (k < blocks).then(|| k * b..blocks * b))
}

/// Gather: every rank's block lands in block (group index) of the root's output. In place,
/// a rank's block already sits at its own place of its buffer (AllGather's layout). Every
/// message is written into place by its sender where the transport can
/// ([`Transport::send_written`]), so the root copies only its own block, while they write.
pub fn gather<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    how: Rooted,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (b, n, root) = (how.block_bytes, g.size(), how.root);
    let mine = g.me * b..(g.me + 1) * b;
    let rg = FromRoot::new(g, root);
    if rg.me() != 0 {
        let own = match &bufs {
            Buffers::OutOfPlace { input, .. } => &input[..b],
            Buffers::InPlace(buf) => &buf[mine],
        };
        return match how.schedule {
            Schedule::Linear => t.send_written(rg.member(0), own),
            Schedule::Binomial => gather_inner(t, &rg, own, b, scratch),
        };
    }
    let (input, out) = match bufs {
        Buffers::OutOfPlace { input, output } => (Some(&input[..b]), output),
        Buffers::InPlace(buf) => (None, buf),
    };
    // In place the own block is where it belongs already.
    let mut own = |out: &mut [u8]| {
        if let Some(input) = input {
            out[mine.clone()].copy_from_slice(input);
        }
    };
    let linear = |i: usize| (rg.member(i + 1), root_parts(i + 1, 1, n, root, b).0);
    let binomial = |i: usize| {
        let (v, part) = from_child(n, root, b, i);
        (rg.member(v), part)
    };
    let (count, at): (usize, &dyn Fn(usize) -> (usize, Range<usize>)) = match how.schedule {
        // From every rank at once, in the order their blocks come.
        Schedule::Linear => (n - 1, &linear),
        // Every child's subtree, each as soon as that child has it.
        Schedule::Binomial => (messages_from_children(n, root), &binomial),
    };
    t.recv_written_while(
        Many {
            count,
            at,
            buf: out,
        },
        &mut own,
    )
}

/// The `i`-th message a binomial root receives from its children (smallest child first, a
/// subtree that wraps as two): the child's rotated index and where it goes in the buffer.
fn from_child(n: usize, root: usize, b: usize, i: usize) -> (usize, Range<usize>) {
    let mut k = 0;
    let mut child = 1;
    while child < n {
        let (first, rest) = root_parts(child, subtree_blocks(child, n), n, root, b);
        for part in std::iter::once(first).chain(rest) {
            if k == i {
                return (child, part);
            }
            k += 1;
        }
        child <<= 1;
    }
    (0, 0..0)
}

/// How many messages a binomial root receives from its children.
fn messages_from_children(n: usize, root: usize) -> usize {
    let mut child = 1;
    let mut count = 0;
    while child < n {
        let blocks = subtree_blocks(child, n);
        count += 1 + usize::from(before_wrap(child, blocks, n, root) < blocks);
        child <<= 1;
    }
    count
}

/// A non-root rank of the binomial gather: stages its subtree (its own block, then its
/// children's, written by them) and sends it to its parent, cut at the wrap if the parent is the
/// root; a leaf sends its block as it is.
fn gather_inner<T: Transport>(
    t: &mut T,
    rg: &FromRoot,
    own: &[u8],
    b: usize,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (v, n) = (rg.me(), rg.size());
    let blocks = subtree_blocks(v, n);
    let parent = rg.member(parent_of(v));
    if blocks == 1 {
        return t.send_written(parent, own);
    }
    scratch.clear();
    scratch.resize(blocks * b, 0);
    // Child v + 2^i's subtree follows the blocks of the smaller children, never cut.
    let at = |i: usize| {
        let mask = 1 << i;
        let child = v + mask;
        (
            rg.member(child),
            mask * b..(mask + subtree_blocks(child, n)) * b,
        )
    };
    let children = Many {
        count: ceil_log2(blocks) as usize,
        at: &at,
        buf: &mut scratch[..],
    };
    t.recv_written_while(children, &mut |s: &mut [u8]| s[..b].copy_from_slice(own))?;
    let (first, rest) = parent_parts(rg, v, blocks, b);
    t.send_written(parent, &scratch[first])?;
    match rest {
        Some(rest) => t.send_written(parent, &scratch[rest]),
        None => Ok(()),
    }
}

/// Scatter: block j of the root's input lands in group index j's output. In place, a rank's
/// output is its own block of its buffer (ReduceScatter's layout).
pub fn scatter<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    how: Rooted,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (b, n) = (how.block_bytes, g.size());
    let mine = g.me * b..(g.me + 1) * b;
    let rg = FromRoot::new(g, how.root);
    if rg.me() == 0 {
        return scatter_root(t, &rg, bufs, how);
    }
    let out = match bufs {
        Buffers::OutOfPlace { output, .. } => &mut output[..b],
        Buffers::InPlace(buf) => &mut buf[mine],
    };
    let v = rg.me();
    let parent_v = parent_of(v);
    let blocks = subtree_blocks(v, n);
    if how.schedule == Schedule::Linear {
        return t.send_recv_copy(None, Some((rg.member(0), out, Combine::Copy)));
    }
    if blocks == 1 {
        return t.send_recv_copy(None, Some((rg.member(parent_v), out, Combine::Copy)));
    }
    scratch.clear();
    scratch.resize(blocks * b, 0);
    recv_cut(t, &rg, parent_v, scratch, parent_parts(&rg, v, blocks, b))?;
    scatter_children(t, &rg, &scratch[..], b)?;
    out.copy_from_slice(&scratch[..b]);
    Ok(())
}

/// The root of a scatter: sends every other rank its block (linear) or its children their
/// subtrees (binomial, largest first so the deepest subtree starts first) from where they lie
/// in its input, and copies its own block while the first of them are read.
fn scatter_root<T: Transport>(
    t: &mut T,
    rg: &FromRoot,
    bufs: Buffers<'_>,
    how: Rooted,
) -> Result<()> {
    let (b, n, root) = (how.block_bytes, rg.size(), rg.root());
    let (input, mut own_out): (&[u8], Option<&mut [u8]>) = match bufs {
        Buffers::OutOfPlace { input, output } => (&input[..n * b], Some(&mut output[..b])),
        // In place the root's own block is already where its output goes.
        Buffers::InPlace(buf) => (&buf[..n * b], None),
    };
    let mut own = || {
        if let Some(out) = own_out.as_deref_mut() {
            out.copy_from_slice(&input[root * b..(root + 1) * b]);
        }
    };
    match how.schedule {
        // Every block offered at once, the own block copied while they are read.
        Schedule::Linear => {
            let at = |i: usize| (rg.member(i + 1), root_parts(i + 1, 1, n, root, b).0);
            let offered = Many {
                count: n - 1,
                at: &at,
                buf: input,
            };
            t.exchange_all_while(offered, Many::none(), &mut own)
        }
        // Largest subtree first, the own block copied while it is read (unless it wraps: two
        // messages to one child go one after the other).
        Schedule::Binomial => {
            let largest = n.next_power_of_two() >> 1;
            let blocks = subtree_blocks(largest, n);
            if largest > 0 && before_wrap(largest, blocks, n, root) == blocks {
                let at = |_| {
                    (
                        rg.member(largest),
                        root_parts(largest, blocks, n, root, b).0,
                    )
                };
                let offered = Many {
                    count: 1,
                    at: &at,
                    buf: input,
                };
                t.exchange_all_while(offered, Many::none(), &mut own)?;
            } else {
                own();
                if largest > 0 {
                    send_cut(
                        t,
                        rg,
                        largest,
                        input,
                        root_parts(largest, blocks, n, root, b),
                    )?;
                }
            }
            let mut mask = largest >> 1;
            while mask > 0 {
                let parts = root_parts(mask, subtree_blocks(mask, n), n, root, b);
                send_cut(t, rg, mask, input, parts)?;
                mask >>= 1;
            }
            Ok(())
        }
    }
}

/// Sends `parts` of `buf` to rotated index `v`: one message, or two where a subtree wraps.
fn send_cut<T: Transport>(
    t: &mut T,
    rg: &FromRoot,
    v: usize,
    buf: &[u8],
    parts: Parts,
) -> Result<()> {
    let (first, rest) = parts;
    t.send_recv_copy(Some((rg.member(v), &buf[first])), None)?;
    match rest {
        Some(rest) => t.send_recv_copy(Some((rg.member(v), &buf[rest])), None),
        None => Ok(()),
    }
}

/// Receives `parts` of `buf` from rotated index `v` (the other end of [`send_cut`]).
fn recv_cut<T: Transport>(
    t: &mut T,
    rg: &FromRoot,
    v: usize,
    buf: &mut [u8],
    parts: Parts,
) -> Result<()> {
    let (first, rest) = parts;
    recv(t, rg, v, &mut buf[first])?;
    match rest {
        Some(rest) => recv(t, rg, v, &mut buf[rest]),
        None => Ok(()),
    }
}

/// Sends this rank's children their subtrees from `staged` (its own subtree in rotated order),
/// largest child first, so the deepest subtree starts first.
fn scatter_children<T: Transport>(t: &mut T, rg: &FromRoot, staged: &[u8], b: usize) -> Result<()> {
    let (v, n) = (rg.me(), rg.size());
    let own = subtree_blocks(v, n);
    // The largest power of two below `own`.
    let mut mask = own.next_power_of_two() >> 1;
    while mask > 0 {
        let blocks = subtree_blocks(v + mask, n);
        let part = &staged[mask * b..(mask + blocks) * b];
        t.send_recv_copy(Some((rg.member(v + mask), part)), None)?;
        mask >>= 1;
    }
    Ok(())
}

/// Receives one message from rotated index `v` into `out`.
fn recv<T: Transport>(t: &mut T, rg: &FromRoot, v: usize, out: &mut [u8]) -> Result<()> {
    t.send_recv_copy(None, Some((rg.member(v), out, Combine::Copy)))
}

#[cfg(test)]
#[path = "rooted_tests.rs"]
mod tests;
