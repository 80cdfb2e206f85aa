//! Collective algorithms written once against [`Transport`](super::transport::Transport).
//!
//! Every algorithm works on a [`Group`] (a sub-set of the launched ranks, for world-size sweeps)
//! and on [`Buffers`] that are either separate input/output or one in-place buffer laid out as
//! NCCL does: AllReduce/Broadcast/Reduce in = out; AllGather's input is the rank's block of the
//! output; ReduceScatter's output is the rank's block of the input.

pub mod bruck;
pub mod doubling;
pub mod pairwise;
pub mod ring;
pub mod rooted;
pub mod tree;

use std::ops::Range;

use super::transport::Transport;
use crate::collective::{DType, ReduceOp};
use crate::error::Result;

/// The ranks taking part in a collective, and this rank's place among them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Global ranks, in group order.
    pub members: Vec<usize>,
    /// This rank's index in `members`.
    pub me: usize,
}

impl Group {
    /// The first `size` global ranks, seen from global rank `rank`; None if `rank` is not in it.
    pub fn first(size: usize, rank: usize) -> Option<Group> {
        (rank < size).then(|| Group {
            members: (0..size).collect(),
            me: rank,
        })
    }

    /// Ranks in the group.
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// The global rank of group index `i` taken modulo the group size (negative steps welcome).
    pub fn peer(&self, i: isize) -> usize {
        let n = self.size() as isize;
        self.members[i.rem_euclid(n) as usize]
    }
}

/// A group seen from one of its ranks as the root: index `v` is group index `(v + root) mod p`,
/// so the root is index 0 and the trees and rooted schedules written for root 0 serve any root.
/// Borrowed and computed on the fly, so a rooted call allocates nothing.
#[derive(Clone, Copy, Debug)]
pub struct FromRoot<'a> {
    group: &'a Group,
    root: usize,
}

impl<'a> FromRoot<'a> {
    /// `group` seen from its index `root` (taken modulo the size).
    pub fn new(group: &'a Group, root: usize) -> FromRoot<'a> {
        let root = root % group.size().max(1);
        FromRoot { group, root }
    }

    /// Ranks in the group.
    pub fn size(&self) -> usize {
        self.group.size()
    }

    /// The root's group index.
    pub fn root(&self) -> usize {
        self.root
    }

    /// This rank's index counted from the root.
    pub fn me(&self) -> usize {
        let n = self.size();
        (self.group.me + n - self.root) % n
    }

    /// The global rank at index `v` counted from the root.
    pub fn member(&self, v: usize) -> usize {
        self.group.members[(v + self.root) % self.size()]
    }
}

/// Buffers of one collective call.
pub enum Buffers<'a> {
    /// Separate input and output.
    OutOfPlace {
        input: &'a [u8],
        output: &'a mut [u8],
    },
    /// One buffer (see the module docs for where input and output sit).
    InPlace(&'a mut [u8]),
}

impl<'a> Buffers<'a> {
    /// The same buffers, borrowed for a shorter while (a call, with the result read after).
    pub fn reborrow(&mut self) -> Buffers<'_> {
        match self {
            Buffers::OutOfPlace { input, output } => Buffers::OutOfPlace { input, output },
            Buffers::InPlace(buf) => Buffers::InPlace(buf),
        }
    }

    /// Separate input and output; in place, the input is first copied to `scratch`, for the
    /// algorithms that overwrite bytes of the one buffer before sending them (AllToAll,
    /// SendRecv). `scratch` keeps its allocation between calls.
    pub fn separate<'s>(self, scratch: &'s mut Vec<u8>) -> (&'s [u8], &'s mut [u8])
    where
        'a: 's,
    {
        match self {
            Buffers::OutOfPlace { input, output } => (input, output),
            Buffers::InPlace(buf) => {
                scratch.clear();
                scratch.extend_from_slice(buf);
                (&scratch[..], buf)
            }
        }
    }
}

/// The element type and reduction of a call.
#[derive(Clone, Copy, Debug)]
pub struct Elements {
    pub dtype: DType,
    pub redop: ReduceOp,
}

/// Byte range of block `k` of `n` near-equal blocks of `count` elements of `el` bytes.
pub fn block(count: usize, n: usize, k: usize, el: usize) -> Range<usize> {
    let base = count / n;
    let extra = count % n;
    let start = k * base + k.min(extra);
    let len = base + usize::from(k < extra);
    start * el..(start + len) * el
}

/// Borrows `a` for reading and `b` for writing from one buffer; the ranges must not overlap.
pub fn split_pair(buf: &mut [u8], a: Range<usize>, b: Range<usize>) -> (&[u8], &mut [u8]) {
    assert!(
        a.end <= b.start || b.end <= a.start,
        "overlapping blocks {a:?} {b:?}"
    );
    if a.start < b.start {
        let (lo, hi) = buf.split_at_mut(b.start);
        (&lo[a], &mut hi[..b.end - b.start])
    } else {
        let (lo, hi) = buf.split_at_mut(a.start);
        (&hi[..a.end - a.start], &mut lo[b])
    }
}

/// Dissemination barrier: ceil(log2 n) rounds of one-byte tokens.
pub fn barrier<T: Transport>(t: &mut T, g: &Group) -> Result<()> {
    let n = g.size() as isize;
    let me = g.me as isize;
    let token = [1u8];
    let mut got = [0u8];
    let mut dist = 1;
    while dist < n {
        let recv = (
            g.peer(me - dist),
            &mut got[..],
            super::transport::Combine::Copy,
        );
        t.send_recv(Some((g.peer(me + dist), &token)), Some(recv))?;
        dist *= 2;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_the_buffer_without_gaps() {
        let el = 4;
        for count in [0, 1, 5, 7, 64] {
            for n in 1..6 {
                let mut next = 0;
                for k in 0..n {
                    let r = block(count, n, k, el);
                    assert_eq!(r.start, next);
                    next = r.end;
                }
                assert_eq!(next, count * el);
            }
        }
        assert_eq!(block(7, 3, 0, 1), 0..3);
        assert_eq!(block(7, 3, 2, 1), 5..7);
    }

    #[test]
    fn split_pair_both_orders() {
        let mut v: Vec<u8> = (0..10).collect();
        let (a, b) = split_pair(&mut v, 0..2, 5..8);
        assert_eq!(a, &[0, 1]);
        b[0] = 99;
        let (a, b) = split_pair(&mut v, 5..8, 1..3);
        assert_eq!(a, &[99, 6, 7]);
        assert_eq!(b, &[1, 2]);
    }

    #[test]
    fn group_peers_wrap() {
        let g = Group::first(4, 1).unwrap();
        assert_eq!(g.peer(g.me as isize - 2), 3);
        assert_eq!(g.peer(5), 1);
        assert!(Group::first(2, 3).is_none());
    }
}
