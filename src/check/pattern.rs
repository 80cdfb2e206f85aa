//! The input pattern of each (op, dtype, reduction, world) and the exact reduction over ranks
//! at every position of its period.

use crate::collective::{DType, Op, ReduceOp};

use super::values::{avg_of_one, exact_limit, power_limit};

/// The pattern repeats every `PERIOD` elements (a prime).
pub const PERIOD: usize = 4093;

/// The largest modulus used, to keep values small enough to read in a debugger.
const MAX_MODULUS: u64 = 1 << 16;

/// The input pattern for one dtype and world size (see the module docs of `check` for the rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// A contributing rank's values lie in `base..base + modulus`.
    pub modulus: u64,
    /// Rank `r` contributes to element `i` only when `(r + i % PERIOD) % stride == 0`; the
    /// others put `base` there (0, or 1 for a product).
    pub stride: usize,
    /// The smallest value: 0, or 1 for a product (whose values are 1 and 2).
    pub base: u64,
}

impl Pattern {
    /// The sum pattern for `p` ranks in `dtype` (`p = 0` is treated as 1).
    pub fn new(dtype: DType, p: usize) -> Pattern {
        let limit = exact_limit(dtype);
        let p = p.max(1) as u64;
        if p <= limit {
            let modulus = (limit / p).saturating_add(1).min(MAX_MODULUS);
            Pattern {
                modulus,
                stride: 1,
                base: 0,
            }
        } else {
            let stride = p.div_ceil(limit) as usize;
            Pattern {
                modulus: 2,
                stride,
                base: 0,
            }
        }
    }

    /// The product pattern: values 1 and 2, at most [`power_limit`] twos per element.
    pub fn product(dtype: DType, p: usize) -> Pattern {
        let k = power_limit(dtype) as usize;
        Pattern {
            modulus: 2,
            stride: p.max(1).div_ceil(k),
            base: 1,
        }
    }

    /// The pattern of a call's inputs. Ops that only move data take that of one rank (no two
    /// values are ever combined); a sum, max or min that of `p` ranks; mulsum that of `2p`
    /// (odd ranks' inputs count twice); a product [`Pattern::product`]; a float average one
    /// contributing rank per element (`stride = p`), so that NCCL's multiply-then-sum and a
    /// sum-then-multiply give the same value in any order.
    pub fn for_call(op: Op, dtype: DType, redop: ReduceOp, p: usize) -> Pattern {
        if !op.reduces() {
            return Pattern::new(dtype, 1);
        }
        match redop {
            ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min => Pattern::new(dtype, p),
            ReduceOp::MulSum => Pattern::new(dtype, p.saturating_mul(2)),
            ReduceOp::Prod => Pattern::product(dtype, p),
            ReduceOp::Avg if dtype.is_float() => Pattern {
                stride: p.max(1),
                ..Pattern::new(dtype, 1)
            },
            ReduceOp::Avg => Pattern::new(dtype, p),
        }
    }

    /// The value rank `rank` puts at element `i`.
    pub fn value(&self, rank: usize, i: usize) -> f64 {
        let t = i % PERIOD;
        if (rank % self.stride + t % self.stride) % self.stride != 0 {
            return self.base as f64;
        }
        (self.base + mix(rank as u64, t as u64) % self.modulus) as f64
    }
}

/// A well-spread 64-bit hash of (rank, position): the splitmix64 finaliser of a combined key.
fn mix(rank: u64, t: u64) -> u64 {
    let mut z = rank.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(t);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// nccl-tests' mulsum scalar of rank `r` (`ncclVerifiablePremulScalar`: 1 for even ranks, 2
/// for odd ones).
pub fn mulsum_scalar(r: usize) -> f64 {
    if r % 2 == 0 {
        1.0
    } else {
        2.0
    }
}

/// The reduction over all ranks of the pattern at each position, computed on first use.
pub(super) struct ReducedTable {
    pattern: Pattern,
    dtype: DType,
    redop: ReduceOp,
    ranks: usize,
    table: Vec<Option<f64>>,
}

impl ReducedTable {
    pub(super) fn new(pattern: Pattern, (dtype, redop): (DType, ReduceOp), ranks: usize) -> Self {
        ReducedTable {
            pattern,
            dtype,
            redop,
            ranks,
            table: vec![None; PERIOD],
        }
    }

    /// The exact reduction over ranks of element `i`.
    pub(super) fn get(&mut self, i: usize) -> f64 {
        let (pattern, redop, ranks) = (self.pattern, self.redop, self.ranks);
        let dtype = self.dtype;
        *self.table[i % PERIOD].get_or_insert_with(|| {
            let values = (0..ranks).map(|r| pattern.value(r, i % PERIOD));
            match redop {
                ReduceOp::Sum => values.sum(),
                ReduceOp::Prod => values.product(),
                ReduceOp::Max => values.fold(f64::NEG_INFINITY, f64::max),
                ReduceOp::Min => values.fold(f64::INFINITY, f64::min),
                ReduceOp::Avg => avg_of_one(dtype, values.sum(), ranks),
                ReduceOp::MulSum => values.enumerate().map(|(r, v)| v * mulsum_scalar(r)).sum(),
            }
        })
    }
}
