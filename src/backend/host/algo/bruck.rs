//! Bruck's AllToAll (Bruck, Ho, Kipnis, Upfal & Weathersby 1997, "Efficient algorithms for
//! all-to-all communications in multiport message-passing systems"), in the form of Thakur,
//! Rabenseifner & Gropp 2005, section 4.4, and of Open MPI's `coll_tuned` "modified Bruck"
//! (`alltoall` algorithm 3): ⌈log2 p⌉ steps for any p instead of pairwise's p−1, at the price of
//! forwarding blocks through other ranks, so that a rank sends about ⌈log2 p⌉/2 × S bytes
//! instead of (p−1)/p × S: the latency algorithm, for small blocks.
//!
//! Rank r, blocks of S/p bytes:
//! 1. local rotation: work block i is input block (r + i) mod p, the block for rank r + i;
//! 2. step k = 0, 1, ... while 2^k < p: send the work blocks whose index has bit k set to rank
//!    r + 2^k and receive the same indices from rank r − 2^k into the same places. A block at
//!    index i moves 2^k ranks on for every bit k set in i, i ranks in all, so it ends at rank
//!    r + i, its destination; afterwards work block i holds the block rank r − i sent to r;
//! 3. inverse rotation: output block (r − i) mod p is work block i.
//!
//! The work buffer is the output itself (in place, the one buffer, rotated where it lies), so the
//! only extra memory is one step's outgoing and incoming blocks, packed (at most ⌊p/2⌋ blocks
//! each), in `scratch`, which keeps its allocation between calls. The blocks of a step are runs
//! of 2^k consecutive indices, copied run by run; where they are one run (always in the last
//! step, whose indices 2^k..p are consecutive) they are sent from where they lie, unpacked.

use std::ops::Range;

use super::{Buffers, Elements, Group};
use crate::backend::host::transport::{Combine, Transport};
use crate::error::Result;

/// Steps of Bruck's exchange among `p` ranks: ⌈log2 p⌉ (0 for p <= 1).
pub use crate::collective::ceil_log2 as steps;

/// The work-block indices sent (and received) in step `k` among `p` ranks, as runs of
/// consecutive indices: the indices below p with bit k set.
pub fn step_runs(p: usize, k: u32) -> impl Iterator<Item = Range<usize>> {
    let d = 1usize << k;
    (d..p)
        .step_by(2 * d)
        .map(move |start| start..(start + d).min(p))
}

/// The output block that work index `i` of rank `r` goes to in the inverse rotation: after
/// the steps it holds the block rank r − i sent.
pub fn unrotated(p: usize, r: usize, i: usize) -> usize {
    (r + p - i % p) % p
}

/// Bruck AllToAll of `count_per_rank` elements per block; `scratch` holds one step's packed
/// outgoing and incoming blocks.
pub fn alltoall<T: Transport>(
    t: &mut T,
    g: &Group,
    bufs: Buffers<'_>,
    count_per_rank: usize,
    e: Elements,
    scratch: &mut Vec<u8>,
) -> Result<()> {
    let (n, me) = (g.size(), g.me);
    let b = count_per_rank * e.dtype.size();
    let work = rotate_in(bufs, n, me, b);
    let half = n / 2 * b;
    if scratch.len() < 2 * half {
        scratch.resize(2 * half, 0);
    }
    let (outgoing, incoming) = scratch[..2 * half].split_at_mut(half);
    for k in 0..steps(n) {
        let d = 1isize << k;
        let send: &[u8] = match single_run(n, k) {
            Some(run) => &work[run.start * b..run.end * b],
            None => {
                let len = pack(work, outgoing, n, k, b);
                &outgoing[..len]
            }
        };
        let len = send.len();
        t.send_recv_copy(
            Some((g.peer(me as isize + d), send)),
            Some((g.peer(me as isize - d), &mut incoming[..len], Combine::Copy)),
        )?;
        unpack(&incoming[..len], work, n, k, b);
    }
    rotate_out(work, n, me, b);
    Ok(())
}

/// The local rotation into the work buffer (the output, or the one in-place buffer): work block
/// i = input block (r + i) mod p. Returns the work buffer's `p` blocks of `b` bytes.
fn rotate_in(bufs: Buffers<'_>, p: usize, r: usize, b: usize) -> &mut [u8] {
    let total = p * b;
    match bufs {
        Buffers::OutOfPlace { input, output } => {
            let work = &mut output[..total];
            let (tail, head) = input[..total].split_at(r * b);
            work[..head.len()].copy_from_slice(head);
            work[head.len()..].copy_from_slice(tail);
            work
        }
        Buffers::InPlace(buf) => {
            let work = &mut buf[..total];
            work.rotate_left(r * b);
            work
        }
    }
}

/// The inverse rotation, in place: output block [`unrotated`]`(p, r, i)` = work block i. The map
/// i → r − i (mod p) is its own inverse, so it is a set of block swaps, each block moved once.
fn rotate_out(work: &mut [u8], p: usize, r: usize, b: usize) {
    for i in 0..p {
        let j = unrotated(p, r, i);
        if i < j {
            let (lo, hi) = work.split_at_mut(j * b);
            lo[i * b..(i + 1) * b].swap_with_slice(&mut hi[..b]);
        }
    }
}

/// Step `k`'s blocks when they are one run of consecutive indices (p <= 2^(k+1)): sent from
/// the work buffer as they lie, since the incoming blocks land in `scratch` first.
fn single_run(p: usize, k: u32) -> Option<Range<usize>> {
    let mut runs = step_runs(p, k);
    let first = runs.next()?;
    runs.next().is_none().then_some(first)
}

/// Copies step `k`'s blocks of `work` into `packed`, in index order; returns the bytes packed.
fn pack(work: &[u8], packed: &mut [u8], p: usize, k: u32, b: usize) -> usize {
    let mut at = 0;
    for run in step_runs(p, k) {
        let bytes = &work[run.start * b..run.end * b];
        packed[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    }
    at
}

/// Copies the packed blocks of step `k` back to their indices in `work` ([`pack`]'s inverse).
fn unpack(packed: &[u8], work: &mut [u8], p: usize, k: u32, b: usize) {
    let mut at = 0;
    for run in step_runs(p, k) {
        let dst = &mut work[run.start * b..run.end * b];
        dst.copy_from_slice(&packed[at..at + dst.len()]);
        at += dst.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PS: std::ops::RangeInclusive<usize> = 1..=9;

    /// How many blocks step `k` sends among `p` ranks: `(p >> (k+1)) << k` from the whole
    /// periods of 2^(k+1) indices, plus what the last, partial period holds beyond its first
    /// 2^k; a closed form to check [`step_runs`] against.
    fn step_blocks(p: usize, k: u32) -> usize {
        let d = 1usize << k;
        ((p >> (k + 1)) << k) + (p % (2 * d)).saturating_sub(d)
    }

    /// The input block that rank `r` puts at work index `i` in the local rotation
    /// ([`rotate_in`]): the block for rank r + i.
    fn rotated(p: usize, r: usize, i: usize) -> usize {
        (r + i) % p
    }

    #[test]
    fn steps_are_ceil_log2() {
        let got: Vec<u32> = PS.map(steps).collect();
        assert_eq!(got, [0, 1, 2, 2, 3, 3, 3, 3, 4]);
        assert_eq!(steps(0), 0);
        for p in 2..=1025usize {
            let s = steps(p);
            assert!(1usize << s >= p && 1usize << (s - 1) < p, "p = {p}");
        }
    }

    #[test]
    fn each_step_sends_the_indices_with_its_bit_set() {
        for p in PS {
            let mut total = 0;
            for k in 0..steps(p) {
                let runs: Vec<Range<usize>> = step_runs(p, k).collect();
                let listed: Vec<usize> = runs.iter().flat_map(|r| r.clone()).collect();
                let want: Vec<usize> = (0..p).filter(|i| i >> k & 1 == 1).collect();
                assert_eq!(listed, want, "p = {p}, k = {k}");
                assert!(runs.iter().all(|r| !r.is_empty() && r.len() <= 1 << k));
                assert_eq!(step_blocks(p, k), want.len(), "p = {p}, k = {k}");
                // Every step sends something, and never more than the packed halves hold.
                assert!(!want.is_empty() && want.len() <= p / 2, "p = {p}, k = {k}");
                total += want.len();
            }
            // All steps together send every set bit of the indices 0..p once.
            let bits: usize = (0..p).map(|i| i.count_ones() as usize).sum();
            assert_eq!(total, bits, "p = {p}");
            assert_eq!(step_runs(p, steps(p)).count(), 0, "p = {p}: no step beyond");
        }
        // By hand: p = 6 sends {1,3,5}, {2,3}, {4,5}; p = 5 sends {1,3}, {2,3}, {4}.
        let runs = |p, k| {
            step_runs(p, k)
                .map(|r| (r.start, r.end))
                .collect::<Vec<_>>()
        };
        assert_eq!(runs(6, 0), [(1, 2), (3, 4), (5, 6)]);
        assert_eq!(runs(6, 1), [(2, 4)]);
        assert_eq!(runs(6, 2), [(4, 6)]);
        assert_eq!(runs(5, 2), [(4, 5)]);
        let counts: Vec<usize> = (0..3).map(|k| step_blocks(5, k)).collect();
        assert_eq!(counts, [2, 2, 1]);
    }

    #[test]
    fn only_steps_of_one_run_are_sent_unpacked() {
        for p in PS {
            for k in 0..steps(p) {
                let runs: Vec<Range<usize>> = step_runs(p, k).collect();
                let want = (runs.len() == 1).then(|| runs[0].clone());
                assert_eq!(single_run(p, k), want, "p = {p}, k = {k}");
            }
            // The last step's indices 2^k..p are always one run.
            if p > 1 {
                let last = steps(p) - 1;
                assert_eq!(single_run(p, last), Some((1 << last)..p), "p = {p}");
            }
        }
        // p = 6: {1,3,5} and {2,3} are packed, {4,5} is not.
        let one: Vec<bool> = (0..3).map(|k| single_run(6, k).is_some()).collect();
        assert_eq!(one, [false, true, true]);
    }

    #[test]
    fn the_rotations_are_inverse_permutations() {
        for p in PS {
            for r in 0..p {
                let into: Vec<usize> = (0..p).map(|i| rotated(p, r, i)).collect();
                let out: Vec<usize> = (0..p).map(|i| unrotated(p, r, i)).collect();
                for v in [&into, &out] {
                    let mut sorted = v.clone();
                    sorted.sort();
                    assert_eq!(sorted, (0..p).collect::<Vec<_>>(), "p = {p}, r = {r}");
                }
                // Rank r's own block sits at index 0 throughout and goes back to block r.
                assert_eq!((into[0], out[0]), (r, r));
                // The inverse rotation is an involution (what makes it a set of swaps).
                assert!((0..p).all(|i| unrotated(p, r, out[i]) == i));
            }
        }
        assert_eq!(
            (0..5).map(|i| rotated(5, 3, i)).collect::<Vec<_>>(),
            [3, 4, 0, 1, 2]
        );
        assert_eq!(
            (0..5).map(|i| unrotated(5, 3, i)).collect::<Vec<_>>(),
            [3, 2, 1, 0, 4]
        );
    }

    /// The whole schedule on (source, destination) tags: every rank ends with block j from rank
    /// j, for every p of 1..=9.
    #[test]
    fn the_schedule_delivers_every_block() {
        for p in PS {
            let mut work: Vec<Vec<(usize, usize)>> = (0..p)
                .map(|r| (0..p).map(|i| (r, rotated(p, r, i))).collect())
                .collect();
            for k in 0..steps(p) {
                let d = 1 << k;
                let sent: Vec<Vec<(usize, usize)>> = work
                    .iter()
                    .map(|w| step_runs(p, k).flatten().map(|i| w[i]).collect())
                    .collect();
                for (r, w) in work.iter_mut().enumerate() {
                    let from = &sent[(r + p - d % p) % p];
                    for (i, &block) in step_runs(p, k).flatten().zip(from) {
                        w[i] = block;
                    }
                }
            }
            for (r, w) in work.iter().enumerate() {
                let mut out = vec![(usize::MAX, usize::MAX); p];
                for (i, &block) in w.iter().enumerate() {
                    out[unrotated(p, r, i)] = block;
                }
                let want: Vec<(usize, usize)> = (0..p).map(|j| (j, r)).collect();
                assert_eq!(out, want, "p = {p}, rank {r}");
            }
        }
    }

    /// The byte-level rotations, in and out of place, with 3-byte blocks, move whole blocks as
    /// the index functions say; packing and unpacking are inverse.
    #[test]
    fn byte_rotations_and_packing_follow_the_indices() {
        let b = 3;
        let blocks = |p: usize, tag: &dyn Fn(usize) -> u8| -> Vec<u8> {
            (0..p * b)
                .map(|x| tag(x / b) * 16 + (x % b) as u8)
                .collect()
        };
        for p in PS {
            for r in 0..p {
                let input = blocks(p, &|j| j as u8);
                let want = blocks(p, &|i| rotated(p, r, i) as u8);
                let mut output = vec![0xee; p * b + 2];
                let bufs = Buffers::OutOfPlace {
                    input: &input,
                    output: &mut output,
                };
                assert_eq!(rotate_in(bufs, p, r, b), &want[..], "p = {p}, r = {r}");
                assert_eq!(
                    &output[p * b..],
                    [0xee, 0xee],
                    "beyond the blocks untouched"
                );
                let mut one = input.clone();
                assert_eq!(rotate_in(Buffers::InPlace(&mut one), p, r, b), &want[..]);

                let mut work = blocks(p, &|i| i as u8);
                rotate_out(&mut work, p, r, b);
                let mut want = vec![0; p * b];
                for i in 0..p {
                    let j = unrotated(p, r, i);
                    want[j * b..(j + 1) * b]
                        .copy_from_slice(&blocks(p, &|x| x as u8)[i * b..(i + 1) * b]);
                }
                assert_eq!(work, want, "p = {p}, r = {r}");
            }
            for k in 0..steps(p) {
                let work = blocks(p, &|i| i as u8);
                let mut packed = vec![0; p / 2 * b];
                let len = pack(&work, &mut packed, p, k, b);
                assert_eq!(len, step_blocks(p, k) * b);
                let firsts: Vec<usize> = packed[..len]
                    .chunks(b)
                    .map(|c| (c[0] / 16) as usize)
                    .collect();
                assert_eq!(firsts, step_runs(p, k).flatten().collect::<Vec<_>>());
                let mut back = vec![0xee; p * b];
                unpack(&packed[..len], &mut back, p, k, b);
                for run in step_runs(p, k) {
                    let bytes = run.start * b..run.end * b;
                    assert_eq!(back[bytes.clone()], work[bytes]);
                }
            }
        }
    }
}
