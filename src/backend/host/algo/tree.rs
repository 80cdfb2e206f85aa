//! Binary-tree algorithms rooted at group index 0: Reduce flows up the tree, Broadcast flows
//! down, AllReduce is Reduce then Broadcast. Messages are cut into chunks so that the levels of
//! the tree work on different chunks at once (pipelining); latency grows with log2(p) levels
//! instead of the ring's p-1 steps.

use std::ops::Range;

use super::{Buffers, Elements, Group};
use crate::backend::host::transport::{Combine, Transport};
use crate::error::Result;

/// Pipeline chunk; a multiple of every element size.
const CHUNK: usize = 64 * 1024;

/// Parent and children of group index `i` in a binary tree of `n` nodes.
fn links(g: &Group) -> (Option<usize>, Vec<usize>) {
    let (i, n) = (g.me, g.size());
    let parent = (i > 0).then(|| g.members[(i - 1) / 2]);
    let kids = [2 * i + 1, 2 * i + 2]
        .into_iter()
        .filter(|&c| c < n)
        .map(|c| g.members[c])
        .collect();
    (parent, kids)
}

fn chunks(len: usize) -> impl Iterator<Item = Range<usize>> {
    (0..len.div_ceil(CHUNK)).map(move |k| k * CHUNK..((k + 1) * CHUNK).min(len))
}

/// Up the tree: children's data reduced into `work` (plus `src` when out of place), then sent
/// to the parent. A leaf sends its input untouched.
fn reduce_up<T: Transport>(
    t: &mut T,
    g: &Group,
    src: Option<&[u8]>,
    work: &mut [u8],
    e: Elements,
) -> Result<()> {
    let (parent, kids) = links(g);
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
fn broadcast_down<T: Transport>(t: &mut T, g: &Group, work: &mut [u8]) -> Result<()> {
    let (parent, kids) = links(g);
    for r in chunks(work.len()) {
        if let Some(p) = parent {
            t.recv(p, &mut work[r.clone()], Combine::Copy)?;
        }
        for &kid in &kids {
            t.send(kid, &work[r.clone()])?;
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
    reduce_up(t, g, src, work, e)?;
    broadcast_down(t, g, work)
}

/// Tree Reduce to group index 0; other ranks' outputs hold partial sums afterwards.
pub fn reduce<T: Transport>(t: &mut T, g: &Group, bufs: Buffers<'_>, e: Elements) -> Result<()> {
    let (src, work) = split(bufs);
    reduce_up(t, g, src, work, e)
}

/// Tree Broadcast from group index 0.
pub fn broadcast<T: Transport>(t: &mut T, g: &Group, bufs: Buffers<'_>) -> Result<()> {
    let (src, work) = split(bufs);
    if g.me == 0 {
        if let Some(src) = src {
            work.copy_from_slice(src);
        }
    }
    broadcast_down(t, g, work)
}
