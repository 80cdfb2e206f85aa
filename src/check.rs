//! Correctness checking with inputs whose exact result is known, run after timing.
//!
//! Every rank fills its input with small non-negative integers. Integers are exact in every
//! dtype up to a limit (bf16 256, f16 2048, f32 2^24, f64 2^53, i32 2^31 - 1), and because all
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
//! Values are a hash of the rank and of the element index modulo [`PERIOD`], so every rank's
//! block differs from every other's and a block delivered to the wrong place or an element
//! shifted by one is caught. The period makes the expected reduction a table of `PERIOD`
//! entries, so checking costs O(count) per rank instead of O(p · count). It is a prime, so
//! blocks of a power-of-two number of elements never line up with it; a ReduceScatter block
//! swap goes unnoticed only when the per-rank count is a multiple of it. Max and min over many
//! ranks with a small `m` saturate (bf16 with 64 ranks: almost always 4 and 0) and so detect
//! misplacement poorly; sums carry the detection there.

use half::{bf16, f16};

use crate::collective::{DType, Op, ReduceOp, Semantics};
use crate::model::call::Call;

/// The pattern repeats every `PERIOD` elements (a prime).
pub const PERIOD: usize = 4093;

/// The largest modulus used, to keep values small enough to read in a debugger.
const MAX_MODULUS: u64 = 1 << 16;

/// The value rank `rank` puts at element `i` of its input (element index within its own input
/// buffer) when `p` ranks take part. Always a non-negative integer.
pub fn input_value(op: Op, dtype: DType, p: usize, rank: usize, i: usize) -> f64 {
    Pattern::for_op(op, dtype, p).value(rank, i)
}

/// Fills `buf` (this rank's input of `op`, whole elements of `dtype`) with the rank's input
/// pattern, indexed by element position.
pub fn fill_input(op: Op, dtype: DType, p: usize, rank: usize, buf: &mut [u8]) {
    fill_input_from(op, dtype, p, rank, 0, buf);
}

/// As [`fill_input`] for elements `first..` of the rank's input: `buf` is one piece of an input
/// too large to build at once, filled and copied piece by piece.
pub fn fill_input_from(op: Op, dtype: DType, p: usize, rank: usize, first: usize, buf: &mut [u8]) {
    let pattern = Pattern::for_op(op, dtype, p);
    for i in 0..buf.len() / dtype.size() {
        write_value(dtype, buf, i, pattern.value(rank, first + i));
    }
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

/// The exact expected output of one rank.
struct Expected {
    op: Op,
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
        let pattern = Pattern::for_op(call.op, call.dtype, p);
        Expected {
            op: call.op,
            pattern,
            reduced: ReducedTable::new(pattern, call.redop, p.max(1)),
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
            // Block j came from rank j: its block for this rank, elements rank*cpr.. of its input.
            Semantics::AllToAll => pattern.value(i / cpr, mine(i % cpr)),
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
        | Semantics::SendRecv => shape.count,
        Semantics::ReduceScatter | Semantics::Scatter => shape.count_per_rank,
        Semantics::Reduce | Semantics::Gather if rank == call.root => shape.count,
        Semantics::Reduce | Semantics::Gather => 0,
    }
}

/// Writes `v` as element `i` of `buf` in `dtype` (native endian; i32 saturates). An index
/// outside `buf` writes nothing.
pub fn write_value(dtype: DType, buf: &mut [u8], i: usize, v: f64) {
    let Some(at) = element_range(dtype, i).and_then(|r| buf.get_mut(r)) else {
        return;
    };
    match dtype {
        DType::F32 => at.copy_from_slice(&(v as f32).to_ne_bytes()),
        DType::F64 => at.copy_from_slice(&v.to_ne_bytes()),
        DType::I32 => at.copy_from_slice(&(v as i32).to_ne_bytes()),
        DType::F16 => at.copy_from_slice(&f16::from_f64(v).to_ne_bytes()),
        DType::BF16 => at.copy_from_slice(&bf16::from_f64(v).to_ne_bytes()),
    }
}

/// Reads element `i` of `buf` in `dtype` (native endian) as f64; NaN when `i` is outside `buf`.
pub fn read_value(dtype: DType, buf: &[u8], i: usize) -> f64 {
    let Some(at) = element_range(dtype, i).and_then(|r| buf.get(r)) else {
        return f64::NAN;
    };
    match dtype {
        DType::F32 => f32::from_ne_bytes(to_array(at)) as f64,
        DType::F64 => f64::from_ne_bytes(to_array(at)),
        DType::I32 => i32::from_ne_bytes(to_array(at)) as f64,
        DType::F16 => f16::from_ne_bytes(to_array(at)).to_f64(),
        DType::BF16 => bf16::from_ne_bytes(to_array(at)).to_f64(),
    }
}

/// The byte range of element `i`, or `None` when it does not fit in `usize`.
fn element_range(dtype: DType, i: usize) -> Option<std::ops::Range<usize>> {
    let start = i.checked_mul(dtype.size())?;
    Some(start..start.checked_add(dtype.size())?)
}

/// The first `N` bytes of `at` as an array (callers pass exactly `N` bytes).
fn to_array<const N: usize>(at: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&at[..N]);
    a
}

/// The largest integer below which every integer, and so every partial sum of non-negative
/// integers not above it, is exact in `dtype`.
pub fn exact_limit(dtype: DType) -> u64 {
    match dtype {
        DType::BF16 => 1 << 8,
        DType::F16 => 1 << 11,
        DType::F32 => 1 << 24,
        DType::F64 => 1 << 53,
        DType::I32 => i32::MAX as u64,
    }
}

/// The input pattern for one dtype and world size (see the module docs for the rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// Values lie in `0..modulus`.
    pub modulus: u64,
    /// Rank `r` contributes to element `i` only when `(r + i % PERIOD) % stride == 0`.
    pub stride: usize,
}

impl Pattern {
    /// The pattern for `p` ranks in `dtype` (`p = 0` is treated as 1).
    pub fn new(dtype: DType, p: usize) -> Pattern {
        let limit = exact_limit(dtype);
        let p = p.max(1) as u64;
        if p <= limit {
            let modulus = (limit / p + 1).min(MAX_MODULUS);
            Pattern { modulus, stride: 1 }
        } else {
            let stride = p.div_ceil(limit) as usize;
            Pattern { modulus: 2, stride }
        }
    }

    /// The pattern of `op`'s inputs: [`Pattern::new`] for `p` ranks where `op` reduces, that
    /// of one rank where it only moves data (no two values are ever added).
    pub fn for_op(op: Op, dtype: DType, p: usize) -> Pattern {
        Pattern::new(dtype, if op.reduces() { p } else { 1 })
    }

    /// The value rank `rank` puts at element `i`.
    pub fn value(&self, rank: usize, i: usize) -> f64 {
        let t = i % PERIOD;
        if (rank % self.stride + t % self.stride) % self.stride != 0 {
            return 0.0;
        }
        (mix(rank as u64, t as u64) % self.modulus) as f64
    }
}

/// A well-spread 64-bit hash of (rank, position): the splitmix64 finaliser of a combined key.
fn mix(rank: u64, t: u64) -> u64 {
    let mut z = rank.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(t);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The reduction over all ranks of the pattern at each position, computed on first use.
struct ReducedTable {
    pattern: Pattern,
    redop: ReduceOp,
    ranks: usize,
    table: Vec<Option<f64>>,
}

impl ReducedTable {
    fn new(pattern: Pattern, redop: ReduceOp, ranks: usize) -> ReducedTable {
        ReducedTable {
            pattern,
            redop,
            ranks,
            table: vec![None; PERIOD],
        }
    }

    /// The exact reduction over ranks of element `i`.
    fn get(&mut self, i: usize) -> f64 {
        let (pattern, redop, ranks) = (self.pattern, self.redop, self.ranks);
        *self.table[i % PERIOD].get_or_insert_with(|| {
            let values = (0..ranks).map(|r| pattern.value(r, i % PERIOD));
            match redop {
                ReduceOp::Sum => values.sum(),
                ReduceOp::Max => values.fold(f64::NEG_INFINITY, f64::max),
                ReduceOp::Min => values.fold(f64::INFINITY, f64::min),
            }
        })
    }
}

#[cfg(test)]
#[path = "check/tests.rs"]
mod tests;
