//! Algorithm-shaped models: how the time of a collective grows with world size p, node count
//! and message size S, as a linear combination `T = Σ coef_i(p, nodes, S) · param_i`.
//!
//! Latency coefficients count dependent steps (parameter in µs per step); bandwidth
//! coefficients count kilobytes (10³ B) each rank sends on the critical path, so that their
//! parameters come out in ns per byte (µs per kB). The forms are those of the textbook
//! analyses (Thakur, Rabenseifner & Gropp 2005; Chan et al. 2007), with S the nccl-tests size:
//!
//! | form | op | coefficients |
//! | --- | --- | --- |
//! | ring | AllGather, ReduceScatter | `p−1`, `(p−1)/p·S` |
//! | ring | AllReduce | `2(p−1)`, `2(p−1)/p·S` |
//! | tree | AllReduce | `2⌈log2 p⌉`, `S` (pipelined: bandwidth term independent of p) |
//! | tree | Broadcast, Reduce | `⌈log2 p⌉`, `S` |
//! | recursive-doubling | AllReduce | `k`, `k·S` with `k = ⌊log2 p⌋ (+2 if p is not a power of 2)` |
//! | halving-doubling | AllGather, ReduceScatter | `⌈log2 p⌉`, `(p−1)/p·S` |
//! | halving-doubling | AllReduce, Reduce | `2⌈log2 p⌉`, `2(p−1)/p·S` (Rabenseifner) |
//! | neighbor-exchange | AllGather | `p/2`, `(p−1)/p·S` |
//! | two-level | AllGather, ReduceScatter | `r−1`, `(r−1)/r·S`, `n−1`, `(n−1)/n·S/r` |
//! | two-level | AllReduce | twice the above (ReduceScatter then AllGather) |
//!
//! Halving-doubling is the shape of Bruck's AllGather, the recursive-halving ReduceScatter and
//! Rabenseifner's AllReduce and Reduce (a halving ReduceScatter, then a doubling AllGather or a
//! binomial gather); exact for powers of two (and for Bruck at any p), while MPI libraries add
//! fold-in steps elsewhere.
//!
//! Two-level is the hierarchical schedule over n nodes of r ranks: within each node, then
//! between nodes where each of the r ranks carries 1/r of the data over the network. Reducing
//! ops fold the cost of the reduction into beta (a per-op model cannot tell the two apart).

use crate::collective::{Algo, Op};

/// A model family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Form {
    Ring,
    Tree,
    RecursiveDoubling,
    HalvingDoubling,
    NeighborExchange,
    TwoLevel,
}

const SINGLE_PARAMS: [&str; 2] = ["alpha_us", "beta_ns_per_byte"];
const TWO_LEVEL_PARAMS: [&str; 4] = [
    "alpha_intra_us",
    "beta_intra_ns_per_byte",
    "alpha_inter_us",
    "beta_inter_ns_per_byte",
];

impl Form {
    /// The single-level form of an algorithm.
    pub fn for_algo(algo: Algo) -> Form {
        match algo {
            Algo::Ring => Form::Ring,
            Algo::Tree => Form::Tree,
            Algo::RecursiveDoubling => Form::RecursiveDoubling,
            Algo::RecursiveHalving | Algo::Rabenseifner | Algo::Bruck => Form::HalvingDoubling,
            Algo::NeighborExchange => Form::NeighborExchange,
            // The library picks per size; the ring form is the bandwidth-optimal shape most
            // libraries use for large messages. NVLS and CollNet reduce in the switch or the
            // network: bandwidth-bound like a ring, with a flat latency the ring's alpha absorbs.
            Algo::Auto | Algo::Nvls | Algo::CollNet => Form::Ring,
        }
    }

    /// The name written to fit.json.
    pub fn name(self) -> &'static str {
        match self {
            Form::Ring => "ring",
            Form::Tree => "tree",
            Form::RecursiveDoubling => "recursive-doubling",
            Form::HalvingDoubling => "halving-doubling",
            Form::NeighborExchange => "neighbor-exchange",
            Form::TwoLevel => "two-level",
        }
    }

    /// The form of a name in fit.json.
    pub fn from_name(name: &str) -> Option<Form> {
        [
            Form::Ring,
            Form::Tree,
            Form::RecursiveDoubling,
            Form::HalvingDoubling,
            Form::NeighborExchange,
            Form::TwoLevel,
        ]
        .into_iter()
        .find(|f| f.name() == name)
    }

    /// Parameter names (with units), in coefficient order.
    pub fn param_names(self) -> &'static [&'static str] {
        match self {
            Form::TwoLevel => &TWO_LEVEL_PARAMS,
            _ => &SINGLE_PARAMS,
        }
    }

    /// Whether the form describes `op` (two-level needs an op made of ring phases).
    pub fn covers(self, op: Op) -> bool {
        self.coefficients(op, 4, 2, 1.0).is_some()
    }

    /// The formula in words, for fit.json and tables.
    pub fn formula(self, op: Op) -> String {
        let ring = "(p-1)·alpha + (p-1)/p·S·beta";
        let two =
            "(r-1)·alpha_intra + (r-1)/r·S·beta_intra + (n-1)·alpha_inter + (n-1)/n·S/r·beta_inter";
        match (self, op) {
            (Form::Ring, Op::AllReduce) => "2(p-1)·alpha + 2(p-1)/p·S·beta".into(),
            (Form::Ring, _) => ring.into(),
            (Form::Tree, Op::AllReduce) => "2·ceil(log2 p)·alpha + S·beta".into(),
            (Form::Tree, _) => "ceil(log2 p)·alpha + S·beta".into(),
            (Form::RecursiveDoubling, _) => {
                "k·alpha + k·S·beta, k = floor(log2 p) + 2 if p is not a power of 2".into()
            }
            (Form::HalvingDoubling, Op::AllReduce | Op::Reduce) => {
                "2·ceil(log2 p)·alpha + 2(p-1)/p·S·beta".into()
            }
            (Form::HalvingDoubling, _) => "ceil(log2 p)·alpha + (p-1)/p·S·beta".into(),
            (Form::NeighborExchange, _) => "p/2·alpha + (p-1)/p·S·beta".into(),
            (Form::TwoLevel, Op::AllReduce) => format!("2·[{two}]"),
            (Form::TwoLevel, _) => two.into(),
        }
    }

    /// Coefficients of the parameters for `op` at world `p` over `nodes` nodes and size
    /// `bytes`; None where the form does not describe the op (or nodes does not divide p).
    pub fn coefficients(self, op: Op, p: usize, nodes: usize, bytes: f64) -> Option<Vec<f64>> {
        let kb = bytes / 1e3;
        let pf = p as f64;
        match (self, op) {
            (Form::Ring, Op::AllGather | Op::ReduceScatter) => {
                Some(vec![pf - 1.0, (pf - 1.0) / pf * kb])
            }
            (Form::Ring, Op::AllReduce) => Some(vec![2.0 * (pf - 1.0), 2.0 * (pf - 1.0) / pf * kb]),
            (Form::Tree, Op::AllReduce) => Some(vec![2.0 * ceil_log2(p), kb]),
            (Form::Tree, Op::Broadcast | Op::Reduce) => Some(vec![ceil_log2(p), kb]),
            (Form::RecursiveDoubling, Op::AllReduce) => {
                let k = doubling_steps(p);
                Some(vec![k, k * kb])
            }
            (Form::HalvingDoubling, Op::AllGather | Op::ReduceScatter) => {
                Some(vec![ceil_log2(p), (pf - 1.0) / pf * kb])
            }
            (Form::HalvingDoubling, Op::AllReduce | Op::Reduce) => {
                Some(vec![2.0 * ceil_log2(p), 2.0 * (pf - 1.0) / pf * kb])
            }
            (Form::NeighborExchange, Op::AllGather) => Some(vec![pf / 2.0, (pf - 1.0) / pf * kb]),
            (Form::TwoLevel, _) => two_level(op, p, nodes, kb),
            _ => None,
        }
    }
}

/// Hierarchical coefficients; None when the op is not made of ring phases or nodes ∤ p.
fn two_level(op: Op, p: usize, nodes: usize, kb: f64) -> Option<Vec<f64>> {
    let times = match op {
        Op::AllGather | Op::ReduceScatter => 1.0,
        Op::AllReduce => 2.0,
        _ => return None,
    };
    if nodes == 0 || p % nodes != 0 {
        return None;
    }
    let r = (p / nodes) as f64;
    let n = nodes as f64;
    let c = [r - 1.0, (r - 1.0) / r * kb, n - 1.0, (n - 1.0) / n * kb / r];
    Some(c.iter().map(|x| times * x).collect())
}

/// ⌈log2 p⌉ as a float (0 for p <= 1).
fn ceil_log2(p: usize) -> f64 {
    (usize::BITS - p.max(1).saturating_sub(1).leading_zeros()) as f64
}

/// Steps of recursive doubling: ⌊log2 p⌋, plus a fold-in and a fold-out step when p is not a
/// power of two.
fn doubling_steps(p: usize) -> f64 {
    if p <= 1 {
        return 0.0;
    }
    let floor = (usize::BITS - 1 - p.leading_zeros()) as f64;
    if p.is_power_of_two() {
        floor
    } else {
        floor + 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_counts() {
        let c: Vec<f64> = [1, 2, 3, 4, 5, 8, 9]
            .iter()
            .map(|&p| ceil_log2(p))
            .collect();
        assert_eq!(c, [0.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0]);
        let d: Vec<f64> = [1, 2, 3, 4, 6, 8]
            .iter()
            .map(|&p| doubling_steps(p))
            .collect();
        assert_eq!(d, [0.0, 1.0, 3.0, 2.0, 4.0, 3.0]);
    }

    #[test]
    fn halving_doubling_and_neighbor_exchange_coefficients() {
        // 8 ranks, 1 MB: Bruck 3 steps moving 7/8 MB; Rabenseifner twice that.
        let hd = Form::HalvingDoubling;
        assert_eq!(
            hd.coefficients(Op::AllGather, 8, 1, 1e6).unwrap(),
            vec![3.0, 875.0]
        );
        assert_eq!(
            hd.coefficients(Op::AllReduce, 8, 1, 1e6).unwrap(),
            vec![6.0, 1750.0]
        );
        assert!(hd.coefficients(Op::Broadcast, 8, 1, 1e6).is_none());
        let ne = Form::NeighborExchange;
        assert_eq!(
            ne.coefficients(Op::AllGather, 8, 1, 1e6).unwrap(),
            vec![4.0, 875.0]
        );
        assert!(!ne.covers(Op::AllReduce));
        for f in [hd, ne] {
            assert_eq!(Form::from_name(f.name()), Some(f));
        }
        assert_eq!(Form::for_algo(Algo::Rabenseifner), hd);
    }

    #[test]
    fn ring_coefficients_follow_the_busbw_factors() {
        // 8 ranks, 1 MB: AllGather moves 7/8 MB per rank over 7 steps.
        let ag = Form::Ring.coefficients(Op::AllGather, 8, 1, 1e6).unwrap();
        assert_eq!(ag, vec![7.0, 875.0]);
        let ar = Form::Ring.coefficients(Op::AllReduce, 8, 1, 1e6).unwrap();
        assert_eq!(ar, vec![14.0, 1750.0]);
        assert!(Form::Ring.coefficients(Op::Broadcast, 8, 1, 1e6).is_none());
    }

    #[test]
    fn two_level_reduces_to_ring_on_one_node_and_splits_network_share() {
        let one = Form::TwoLevel
            .coefficients(Op::AllGather, 8, 1, 1e6)
            .unwrap();
        assert_eq!(one, vec![7.0, 875.0, 0.0, 0.0]);
        // 4 nodes × 8 ranks: 7 intra steps, 3 inter steps carrying 3/4 × 1 MB / 8 per rank.
        let c = Form::TwoLevel
            .coefficients(Op::AllReduce, 32, 4, 1e6)
            .unwrap();
        assert_eq!(c, vec![14.0, 1750.0, 6.0, 187.5]);
        assert!(Form::TwoLevel
            .coefficients(Op::AllGather, 6, 4, 1.0)
            .is_none());
    }

    #[test]
    fn names_round_trip() {
        for f in [
            Form::Ring,
            Form::Tree,
            Form::RecursiveDoubling,
            Form::HalvingDoubling,
            Form::NeighborExchange,
            Form::TwoLevel,
        ] {
            assert_eq!(Form::from_name(f.name()), Some(f));
            assert!(!f.formula(Op::AllReduce).is_empty());
        }
        assert!(Form::Tree.covers(Op::Broadcast) && !Form::TwoLevel.covers(Op::Broadcast));
    }
}
