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
//! | ring | AllGather, ReduceScatter (one ring phase) | `p−1`, `(p−1)/p·S` |
//! | ring | AllReduce (two ring phases) | `2(p−1)`, `2(p−1)/p·S` |
//! | tree | AllReduce | `2⌈log2 p⌉`, `S` (pipelined: bandwidth term independent of p) |
//! | tree | Broadcast, Reduce | `⌈log2 p⌉`, `S` |
//! | recursive-doubling | AllReduce | `k`, `k·S` with `k = ⌊log2 p⌋ (+2 if p is not a power of 2)` |
//! | recursive-doubling | AllGather, Hypercube | `⌈log2 p⌉`, `(p−1)/p·S` |
//! | halving-doubling | AllGather, ReduceScatter | `⌈log2 p⌉`, `(p−1)/p·S` |
//! | halving-doubling | AllReduce, Reduce | `2⌈log2 p⌉`, `2(p−1)/p·S` (Rabenseifner) |
//! | neighbor-exchange | AllGather | `p/2`, `(p−1)/p·S` |
//! | pairwise | AllToAll | `p−1`, `(p−1)/p·S` |
//! | bruck | AllToAll | `⌈log2 p⌉`, `b(p)/p·S` with `b(p) = Σ_{i<p} popcount(i)` |
//! | direct | SendRecv | `1`, `S` |
//! | linear | Gather, Scatter | `p−1`, `(p−1)/p·S` (the root's p−1 messages) |
//! | binomial | Gather, Scatter | `⌈log2 p⌉`, `(p−1)/p·S` |
//! | two-level | AllGather, ReduceScatter | `r−1`, `(r−1)/r·S`, `n−1`, `(n−1)/n·S/r` |
//! | two-level | AllReduce | twice the above (ReduceScatter then AllGather) |
//!
//! Bruck's AllToAll sends in step k the blocks whose index has bit k set, so over its ⌈log2 p⌉
//! steps a rank sends every set bit of the indices 0..p once: `b(p)` blocks of S/p (see
//! [`bruck_blocks`]). For a power of two `b(p) = p/2·log2 p`, and the form is Thakur,
//! Rabenseifner & Gropp 2005's `lg p·α + (n/2)·lg p·β` (section 4.4; their n is S, the bytes a
//! process sends in all). The local rotations before and after (copies of S) are left out, as in
//! that analysis.
//!
//! Halving-doubling is the shape of Bruck's AllGather, the recursive-halving ReduceScatter and
//! Rabenseifner's AllReduce and Reduce (a halving ReduceScatter, then a doubling AllGather or a
//! binomial gather); exact for powers of two (and for Bruck at any p), while MPI libraries add
//! fold-in steps elsewhere.
//!
//! Beside them: `log-linear`, the scaling primer's empirical law `a + b·p + c·log2 p` for the
//! latency with the nccl-tests bus factor B(p) for the bandwidth (`a + b·p + c·log2 p +
//! B(p)·S·beta`), and the shapes of NCCL's own tuning model (`nccl-ring`, `nccl-tree`, `chain`,
//! `nvls`, `nvls-tree`, `collnet`, `flat`; see the [`nccl`] module). `fit` fits every candidate
//! of [`Form::candidates`] and keeps the one that best predicts the largest world held out.
//!
//! Two-level is the hierarchical schedule over n nodes of r ranks: within each node, then
//! between nodes where each of the r ranks carries 1/r of the data over the network. Reducing
//! ops fold the cost of the reduction into beta (a per-op model cannot tell the two apart).

use crate::collective::{Algo, Op, Semantics};
use crate::named::named_enum;

mod nccl;

named_enum!(
    /// A model family, named as fit.json writes it.
    Form, "fit form", {
        Ring => "ring",
        Tree => "tree",
        RecursiveDoubling => "recursive-doubling",
        HalvingDoubling => "halving-doubling",
        NeighborExchange => "neighbor-exchange",
        Pairwise => "pairwise",
        Bruck => "bruck",
        Direct => "direct",
        Linear => "linear",
        Binomial => "binomial",
        TwoLevel => "two-level",
        Chain => "chain",
        Flat => "flat",
        LogLinear => "log-linear",
        NcclRing => "nccl-ring",
        NcclTree => "nccl-tree",
        Nvls => "nvls",
        NvlsTree => "nvls-tree",
        CollNet => "collnet",
    }
);

const SINGLE_PARAMS: [&str; 2] = ["alpha_us", "beta_ns_per_byte"];
const TWO_LEVEL_PARAMS: [&str; 4] = [
    "alpha_intra_us",
    "beta_intra_ns_per_byte",
    "alpha_inter_us",
    "beta_inter_ns_per_byte",
];
const NODE_LATENCY_PARAMS: [&str; 3] = ["alpha_intra_us", "alpha_inter_us", "beta_ns_per_byte"];
const LOG_LINEAR_PARAMS: [&str; 4] = [
    "a_us",
    "b_per_rank_us",
    "c_per_log2_rank_us",
    "beta_ns_per_byte",
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
            Algo::Pairwise => Form::Pairwise,
            Algo::Direct => Form::Direct,
            Algo::Linear => Form::Linear,
            Algo::Binomial => Form::Binomial,
            // NVLS and CollNet reduce in the switch: within a node NCCL models them with one
            // latency whatever the rank count (tuning.cc, see `nccl`).
            Algo::Nvls | Algo::CollNet => Form::Flat,
            // The library picks per size; the ring form is the bandwidth-optimal shape most
            // libraries use for large messages.
            Algo::Auto => Form::Ring,
        }
    }

    /// The forms fitted to curves of `algo`, the algorithm's own first: on one node its
    /// single-level shapes, across nodes the shapes with a node term (NCCL's own for NCCL's
    /// algorithms), each with the empirical `log-linear` law beside it. `fit` keeps the one
    /// that best predicts the largest world held out.
    pub fn candidates(algo: Algo, multi_node: bool) -> Vec<Form> {
        use Form::*;
        let mut forms = match (algo, multi_node) {
            (Algo::Ring, false) => vec![Ring],
            (Algo::Ring, true) => vec![TwoLevel, NcclRing, Ring],
            (Algo::Tree, false) => vec![Tree, Chain],
            (Algo::Tree, true) => vec![NcclTree, Tree],
            (Algo::Nvls, false) | (Algo::CollNet, false) => vec![Flat],
            (Algo::Nvls, true) => vec![NvlsTree, Nvls],
            (Algo::CollNet, true) => vec![CollNet],
            (Algo::Auto, false) => vec![Ring, Tree, Chain, Flat],
            (Algo::Auto, true) => vec![TwoLevel, NcclRing, NcclTree, NvlsTree, Ring],
            // Bruck's AllGather has the halving-doubling shape, its AllToAll one of its own
            // (`covers` keeps the op's).
            (Algo::Bruck, false) => vec![HalvingDoubling, Bruck],
            (Algo::Bruck, true) => vec![TwoLevel, HalvingDoubling, Bruck],
            (other, false) => vec![Form::for_algo(other)],
            (other, true) => vec![TwoLevel, Form::for_algo(other)],
        };
        forms.push(LogLinear);
        forms
    }

    /// The form of a name in fit.json.
    pub fn from_name(name: &str) -> Option<Form> {
        Form::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// Parameter names (with units), in coefficient order.
    pub fn param_names(self) -> &'static [&'static str] {
        match self {
            Form::TwoLevel => &TWO_LEVEL_PARAMS,
            Form::LogLinear => &LOG_LINEAR_PARAMS,
            Form::NcclRing | Form::NcclTree | Form::Nvls | Form::NvlsTree | Form::CollNet => {
                &NODE_LATENCY_PARAMS
            }
            Form::Ring
            | Form::Tree
            | Form::RecursiveDoubling
            | Form::HalvingDoubling
            | Form::NeighborExchange
            | Form::Pairwise
            | Form::Bruck
            | Form::Direct
            | Form::Linear
            | Form::Binomial
            | Form::Chain
            | Form::Flat => &SINGLE_PARAMS,
        }
    }

    /// Whether the form has terms of its own for the network between nodes.
    pub fn has_node_terms(self) -> bool {
        self.param_names().iter().any(|n| n.contains("inter"))
    }

    /// Whether the form describes `op` (two-level needs an op made of ring phases), on one
    /// node or across nodes.
    pub fn covers(self, op: Op) -> bool {
        [1, 2]
            .iter()
            .any(|&n| self.coefficients(op, 4, n, 1.0).is_some())
    }

    /// The formula in words, for fit.json and tables.
    pub fn formula(self, op: Op) -> String {
        let ring = "(p-1)·alpha + (p-1)/p·S·beta";
        let two =
            "(r-1)·alpha_intra + (r-1)/r·S·beta_intra + (n-1)·alpha_inter + (n-1)/n·S/r·beta_inter";
        let semantics = op.semantics();
        match (self, op.ring_phases()) {
            (Form::Ring, 2) => "2(p-1)·alpha + 2(p-1)/p·S·beta".into(),
            (Form::Ring, _) => ring.into(),
            (Form::Tree, _) if semantics == Semantics::AllReduce => {
                "2·ceil(log2 p)·alpha + S·beta".into()
            }
            (Form::Tree, _) => "ceil(log2 p)·alpha + S·beta".into(),
            (Form::RecursiveDoubling, _) if semantics == Semantics::AllGather => {
                "log2 p·alpha + (p-1)/p·S·beta".into()
            }
            (Form::RecursiveDoubling, _) => {
                "k·alpha + k·S·beta, k = floor(log2 p) + 2 if p is not a power of 2".into()
            }
            (Form::HalvingDoubling, _)
                if matches!(semantics, Semantics::AllReduce | Semantics::Reduce) =>
            {
                "2·ceil(log2 p)·alpha + 2(p-1)/p·S·beta".into()
            }
            (Form::HalvingDoubling, _) => "ceil(log2 p)·alpha + (p-1)/p·S·beta".into(),
            (Form::NeighborExchange, _) => "p/2·alpha + (p-1)/p·S·beta".into(),
            (Form::Pairwise, _) => ring.into(),
            (Form::Bruck, _) => {
                "ceil(log2 p)·alpha + b(p)/p·S·beta, b(p) = Σ_{i<p} popcount(i) (p/2·log2 p for p a power of 2)"
                    .into()
            }
            (Form::Direct, _) => "alpha + S·beta".into(),
            (Form::Linear, _) => ring.into(),
            (Form::Binomial, _) => "ceil(log2 p)·alpha + (p-1)/p·S·beta".into(),
            (Form::TwoLevel, 2) => format!("2·[{two}]"),
            (Form::TwoLevel, _) => two.into(),
            (Form::LogLinear, _) => "a + b·p + c·log2 p + B(p)·S·beta".into(),
            (nccl_form, _) => nccl::formula(nccl_form, op),
        }
    }

    /// Coefficients of the parameters for `op` at world `p` over `nodes` nodes and size
    /// `bytes`; None where the form does not describe the op (or nodes does not divide p).
    /// The ring-shaped forms follow the op's ring phases, the others what the op computes.
    pub fn coefficients(self, op: Op, p: usize, nodes: usize, bytes: f64) -> Option<Vec<f64>> {
        let kb = bytes / 1e3;
        let pf = p as f64;
        let phases = f64::from(op.ring_phases());
        let ring = op.ring_phases() > 0;
        match (self, op.semantics()) {
            (Form::Ring, _) if ring => {
                Some(vec![phases * (pf - 1.0), phases * (pf - 1.0) / pf * kb])
            }
            (Form::Tree, Semantics::AllReduce) => Some(vec![2.0 * ceil_log2(p), kb]),
            (Form::Tree, Semantics::Broadcast | Semantics::Reduce) => Some(vec![ceil_log2(p), kb]),
            (Form::RecursiveDoubling, Semantics::AllReduce) => {
                let k = doubling_steps(p);
                Some(vec![k, k * kb])
            }
            // Recursive-doubling AllGather (and nccl-tests' hypercube): log2 p exchanges of
            // doubling parts, (p-1)/p of S received in all (Thakur, Rabenseifner & Gropp 2005,
            // section 4.1; exact for powers of two).
            (Form::RecursiveDoubling, Semantics::AllGather) => {
                Some(vec![ceil_log2(p), (pf - 1.0) / pf * kb])
            }
            (Form::HalvingDoubling, Semantics::AllGather | Semantics::ReduceScatter) => {
                Some(vec![ceil_log2(p), (pf - 1.0) / pf * kb])
            }
            (Form::HalvingDoubling, Semantics::AllReduce | Semantics::Reduce) => {
                Some(vec![2.0 * ceil_log2(p), 2.0 * (pf - 1.0) / pf * kb])
            }
            (Form::NeighborExchange, Semantics::AllGather) => {
                Some(vec![pf / 2.0, (pf - 1.0) / pf * kb])
            }
            // p-1 exchanges of one S/p block each; an uneven exchange as its busiest rank's,
            // which sets the time (S its bytes).
            (Form::Pairwise, Semantics::AllToAll | Semantics::AllToAllV) => {
                Some(vec![pf - 1.0, (pf - 1.0) / pf * kb])
            }
            // ⌈log2 p⌉ exchanges, b(p) blocks of S/p in all.
            (Form::Bruck, Semantics::AllToAll) => {
                Some(vec![ceil_log2(p), bruck_blocks(p) as f64 / pf * kb])
            }
            // One message of S each way, whatever p.
            (Form::Direct, Semantics::SendRecv) => Some(vec![1.0, kb]),
            // The root sends (receives) every block but its own: p-1 messages, or ceil(log2 p)
            // subtrees of the binomial tree (Thakur, Rabenseifner & Gropp 2005, section 4.3).
            // A linear AllToAll has every rank send and receive p-1 blocks, all at once.
            (
                Form::Linear,
                Semantics::AllToAll | Semantics::AllToAllV | Semantics::Gather | Semantics::Scatter,
            ) => Some(vec![pf - 1.0, (pf - 1.0) / pf * kb]),
            (Form::Binomial, Semantics::Gather | Semantics::Scatter) => {
                Some(vec![ceil_log2(p), (pf - 1.0) / pf * kb])
            }
            (Form::TwoLevel, _) if ring => two_level(phases, p, nodes, kb),
            (Form::LogLinear, _) => Some(vec![1.0, pf, log2(p), op.busbw_factor(p) * kb]),
            (
                Form::Chain
                | Form::Flat
                | Form::NcclRing
                | Form::NcclTree
                | Form::Nvls
                | Form::NvlsTree
                | Form::CollNet,
                _,
            ) => nccl::coefficients(self, op, p, nodes, kb),
            (
                Form::Ring
                | Form::Tree
                | Form::RecursiveDoubling
                | Form::HalvingDoubling
                | Form::NeighborExchange
                | Form::Pairwise
                | Form::Bruck
                | Form::Direct
                | Form::Linear
                | Form::Binomial
                | Form::TwoLevel,
                _,
            ) => None,
        }
    }
}

/// Hierarchical coefficients of an op made of `phases` ring phases; None where nodes ∤ p.
fn two_level(phases: f64, p: usize, nodes: usize, kb: f64) -> Option<Vec<f64>> {
    if nodes == 0 || p % nodes != 0 {
        return None;
    }
    let r = (p / nodes) as f64;
    let n = nodes as f64;
    let c = [r - 1.0, (r - 1.0) / r * kb, n - 1.0, (n - 1.0) / n * kb / r];
    Some(c.iter().map(|x| phases * x).collect())
}

/// ⌈log2 p⌉ as a float (0 for p <= 1).
fn ceil_log2(p: usize) -> f64 {
    f64::from(crate::collective::ceil_log2(p))
}

/// Blocks one rank sends in Bruck's AllToAll among `p` ranks: step k sends the indices below p
/// with bit k set, `((p >> (k+1)) << k) + max(0, p mod 2^(k+1) − 2^k)` of them, so all steps
/// together send `Σ_{i<p} popcount(i)`: 0, 1, 2, 4, 5, 7, 9, 12 for p = 1..8, `p/2·log2 p` for a
/// power of two.
pub fn bruck_blocks(p: usize) -> usize {
    let mut blocks = 0;
    let mut k = 0;
    while 1usize << k < p {
        let d = 1usize << k;
        blocks += ((p >> (k + 1)) << k) + (p % (2 * d)).saturating_sub(d);
        k += 1;
    }
    blocks
}

/// log2 p as a float (0 for p <= 1).
fn log2(p: usize) -> f64 {
    (p.max(1) as f64).log2()
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
mod tests;
