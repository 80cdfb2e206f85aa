//! Correctness checking with inputs whose exact result is known, run after timing.
//!
//! Every rank fills its input with small non-negative integers. Integers are exact in every
//! dtype up to a limit (fp8 e5m2 8, e4m3 16, bf16 256, f16 2048, f32 2^24, f64 2^53, the integer
//! types their largest value; values stay below 65536 so f64 holds every sum), and because all
//! values are non-negative every partial sum is at most the full sum, so if the largest possible
//! full sum is within the limit the result is exact in any reduction order, and the check can
//! demand bit-exact equality.
//!
//! The pattern rule, for `p` ranks and exact limit `L`:
//! - when `p <= L`, values lie in `0..m` with `m = min(L / p + 1, 65536)`, so `(m - 1) p <= L`
//!   (bf16 with 64 ranks: `m = 5`, sums up to 256);
//! - when `p > L` even 0/1 values could overflow the limit, so values are 0 or 1 and only every
//!   `k`-th rank contributes to a given element, `k = ceil(p / L)`: at most `ceil(p / k) <= L`
//!   ones are summed.
//!
//! Ops that only move data (AllGather, Broadcast, AllToAll, Gather, Scatter, SendRecv) never
//! add two ranks' values, so their pattern is the one of a single rank whatever `p`: values in
//! `0..min(L + 1, 65536)` (bf16 0..=256), and a misplaced block stays detectable at 1024 ranks
//! and beyond, where a reduction's pattern has shrunk to 0/1 values.
//!
//! The other reductions take patterns of their own (`Pattern::for_call`):
//! - **prod**: values 1 and 2, with at most `k` twos per element (`k` from
//!   [`power_limit`]: 2^k finite and exact, e4m3 8, f16 15, i8 6), contributing ranks spaced as
//!   above; every product is a power of two, exact in any order, and integer products wrap the
//!   same in any order anyway.
//! - **avg** on integers: the sum pattern; NCCL sums, then divides by `p` truncating.
//! - **avg** on floats: NCCL multiplies each input by 1/p rounded to the type and then sums, and
//!   the rounded products do not sum exactly in every order; so one rank contributes per
//!   element (`stride = p`, the others give 0) and the result is that one product, rounded once
//!   ([`avg_of_one`]), whatever the order and whether a backend multiplies before or after.
//! - **mulsum**: nccl-tests' scalars are 1 on even ranks and 2 on odd ones ([`mulsum_scalar`]),
//!   so the sum pattern of `2p` ranks keeps the scaled sum within the limit.
//!
//! Values are a hash of the rank and of the element index modulo [`PERIOD`], so every rank's
//! block differs from every other's and a block delivered to the wrong place or an element
//! shifted by one is caught. The period makes the expected reduction a table of `PERIOD`
//! entries, so checking costs O(count) per rank instead of O(p · count). It is a prime, so
//! blocks of a power-of-two number of elements never line up with it; a ReduceScatter block
//! swap goes unnoticed only when the per-rank count is a multiple of it. Max and min over many
//! ranks with a small `m` saturate (bf16 with 64 ranks: almost always 4 and 0) and so detect
//! misplacement poorly; sums carry the detection there.

use crate::collective::uneven::RankCounts;
use crate::collective::Semantics;
use crate::model::call::Call;

mod pattern;
mod values;
use pattern::ReducedTable;
pub use pattern::{mulsum_scalar, Pattern, PERIOD};
pub use values::{avg_of_one, exact_limit, power_limit, read_value, write_value};

/// The value rank `rank` puts at element `i` of its input of `call` (element index within its
/// own input buffer) when `p` ranks take part. Always a non-negative integer.
pub fn input_value(call: &Call, p: usize, rank: usize, i: usize) -> f64 {
    pattern_of(call, p).value(rank, i)
}

/// Fills `buf` (this rank's input of `call`, whole elements of its dtype) with the rank's
/// input pattern, indexed by element position.
pub fn fill_input(call: &Call, p: usize, rank: usize, buf: &mut [u8]) {
    fill_input_from(call, p, rank, 0, buf);
}

/// As [`fill_input`] for elements `first..` of the rank's input: `buf` is one piece of an input
/// too large to build at once, filled and copied piece by piece.
pub fn fill_input_from(call: &Call, p: usize, rank: usize, first: usize, buf: &mut [u8]) {
    let (pattern, dtype) = (pattern_of(call, p), call.dtype);
    for i in 0..buf.len() / dtype.size() {
        write_value(dtype, buf, i, pattern.value(rank, first + i));
    }
}

/// The pattern of `call`'s inputs at `p` ranks.
fn pattern_of(call: &Call, p: usize) -> Pattern {
    Pattern::for_call(call.op, call.dtype, call.redop, p)
}

/// One piece of a rank's output: `bytes` holds elements `first..first + bytes.len() / size`.
#[derive(Clone, Copy, Debug)]
pub struct Piece<'a> {
    pub first: usize,
    pub bytes: &'a [u8],
}

/// Counts the elements of `out` (this rank's output buffer of `call`, its shape as built by
/// [`crate::collective::Shape::new`] for `p` ranks; `rank` is the rank's index in the group) that differ from the
/// exact expected result. Expected elements missing from a short `out` count as wrong. Reduce
/// and Gather define only the root's output, so other ranks report 0.
pub fn count_wrong(call: &Call, p: usize, rank: usize, out: &[u8]) -> u64 {
    let n = expected_count(call, rank);
    let present = n.min(out.len() / call.dtype.size());
    let piece = Piece {
        first: 0,
        bytes: out,
    };
    count_wrong_in(call, p, rank, piece) + (n - present) as u64
}

/// As [`count_wrong`] for one piece of the output (an output too large to copy back at once,
/// checked piece by piece). Elements of the piece past the expected count are not looked at;
/// expected elements outside the piece are the other pieces' to count.
pub fn count_wrong_in(call: &Call, p: usize, rank: usize, piece: Piece) -> u64 {
    let dtype = call.dtype;
    let mut expected = Expected::new(call, p, rank);
    let n = expected_count(call, rank)
        .saturating_sub(piece.first)
        .min(piece.bytes.len() / dtype.size());
    (0..n)
        .filter(|&i| read_value(dtype, piece.bytes, i) != expected.at(piece.first + i))
        .count() as u64
}

/// [`count_wrong`], or [`count_wrong_uneven`] where `uneven` holds this rank's counts of an
/// alltoallv.
pub fn count_wrong_with(
    call: &Call,
    (p, rank): (usize, usize),
    uneven: Option<&RankCounts>,
    out: &[u8],
) -> u64 {
    match uneven {
        Some(counts) => count_wrong_uneven(call, p, counts, out),
        None => count_wrong(call, p, rank, out),
    }
}

/// [`count_wrong_in`], or [`count_wrong_uneven_in`] where `uneven` holds this rank's counts.
pub fn count_wrong_in_with(
    call: &Call,
    (p, rank): (usize, usize),
    uneven: Option<&RankCounts>,
    piece: Piece,
) -> u64 {
    match uneven {
        Some(counts) => count_wrong_uneven_in(call, p, counts, piece),
        None => count_wrong_in(call, p, rank, piece),
    }
}

/// [`count_wrong`] for an alltoallv call whose counts for this rank are `counts`: the
/// output holds, packed in source order, each source's elements for this rank, which sit in
/// its input from `counts.src_offset[src]`.
pub fn count_wrong_uneven(call: &Call, p: usize, counts: &RankCounts, out: &[u8]) -> u64 {
    let present = out.len() / call.dtype.size();
    let piece = Piece {
        first: 0,
        bytes: out,
    };
    let missing = counts.received().saturating_sub(present) as u64;
    count_wrong_uneven_in(call, p, counts, piece) + missing
}

/// As [`count_wrong_uneven`] for one piece of the output.
pub fn count_wrong_uneven_in(call: &Call, p: usize, counts: &RankCounts, piece: Piece) -> u64 {
    let (pattern, dtype) = (pattern_of(call, p), call.dtype);
    let here = piece.first..piece.first + piece.bytes.len() / dtype.size();
    let blocks = counts.recv.iter().zip(&counts.recv_displ).enumerate();
    let mut wrong = 0;
    for (src, (&n, &at)) in blocks {
        let offset = counts.src_offset[src];
        let seen = at.max(here.start)..(at + n).min(here.end);
        wrong += seen
            .filter(|&i| {
                let got = read_value(dtype, piece.bytes, i - piece.first);
                got != pattern.value(src, offset + i - at)
            })
            .count() as u64;
    }
    wrong
}

/// The exact expected output of one rank.
struct Expected {
    op: crate::collective::Op,
    pattern: Pattern,
    reduced: ReducedTable,
    /// Elements per rank; max(1) only guards an inconsistent shape (elements but none per rank).
    cpr: usize,
    p: usize,
    rank: usize,
    root: usize,
}

impl Expected {
    fn new(call: &Call, p: usize, rank: usize) -> Expected {
        let pattern = pattern_of(call, p);
        Expected {
            op: call.op,
            pattern,
            reduced: ReducedTable::new(pattern, (call.dtype, call.redop), p.max(1)),
            cpr: call.shape.count_per_rank.max(1),
            p: p.max(1),
            rank,
            root: call.root,
        }
    }

    /// Element `i` of the rank's output.
    fn at(&mut self, i: usize) -> f64 {
        let (cpr, pattern) = (self.cpr, self.pattern);
        // Element k of this rank's block of a buffer split per rank.
        let mine = |k: usize| self.rank.saturating_mul(cpr).saturating_add(k);
        match self.op.semantics() {
            Semantics::AllReduce | Semantics::Reduce => self.reduced.get(i),
            Semantics::ReduceScatter => self.reduced.get(mine(i)),
            // Block j came from rank j.
            Semantics::AllGather | Semantics::Gather => pattern.value(i / cpr, i % cpr),
            Semantics::Broadcast => pattern.value(self.root, i),
            // The root's block for this rank.
            Semantics::Scatter => pattern.value(self.root, mine(i)),
            // What the previous rank sent.
            Semantics::SendRecv => pattern.value((self.rank + self.p - 1) % self.p, i),
            // Block j came from rank j: its block for this rank, elements rank*cpr.. of its input
            // (an uneven exchange whose counts are not given is the uniform one).
            Semantics::AllToAll | Semantics::AllToAllV => pattern.value(i / cpr, mine(i % cpr)),
        }
    }
}

/// How many output elements rank `rank` has defined for `call`.
fn expected_count(call: &Call, rank: usize) -> usize {
    let shape = &call.shape;
    match call.op.semantics() {
        Semantics::AllReduce
        | Semantics::Broadcast
        | Semantics::AllGather
        | Semantics::AllToAll
        | Semantics::AllToAllV
        | Semantics::SendRecv => shape.count,
        Semantics::ReduceScatter | Semantics::Scatter => shape.count_per_rank,
        Semantics::Reduce | Semantics::Gather if rank == call.root => shape.count,
        Semantics::Reduce | Semantics::Gather => 0,
    }
}

#[cfg(test)]
#[path = "check/tests.rs"]
mod tests;
