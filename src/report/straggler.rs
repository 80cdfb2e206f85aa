//! Stragglers over time, from the per-iteration samples (samples.csv: every timed iteration's
//! time, which rank was slowest and the fastest rank's time): per rank and per node, how often
//! it was the slowest, by how much, whether persistently or in spikes; and how much slower the
//! first timed iteration of a point is than the rest. Pure.
//!
//! A rank is slowest by chance in 1/p of a point's iterations (p ranks). It is **persistent**
//! when it was slowest in more than halfway between chance and every iteration it took part in
//! (over the points of 2 or more ranks). An iteration is a **spike** when its time exceeds
//! [`SPIKE`] times its point's median; the rank slowest in it is charged with the spike.

use crate::model::record::IterSample;

/// An iteration whose time exceeds this multiple of its point's median is a spike.
pub const SPIKE: f64 = 2.0;

/// One point's samples in iteration order, and the ranks it ran on.
pub struct PointIters<'a> {
    pub world: usize,
    pub iters: &'a [IterSample],
    /// The launch rank of each of the point's ranks (ranks.csv's `global_rank`); empty: the
    /// point's rank r is launch rank r.
    pub launch_ranks: &'a [usize],
    /// The node of each of the point's ranks; empty: `rank_nodes` of the launch rank.
    pub nodes: &'a [usize],
}

impl PointIters<'_> {
    /// The launch rank of the point's rank `r`.
    fn launch_rank(&self, r: usize) -> usize {
        self.launch_ranks.get(r).copied().unwrap_or(r)
    }
}

/// What one rank (or node) did as the slowest.
#[derive(Clone, Debug, PartialEq)]
pub struct Straggler {
    /// The rank (or node index).
    pub id: usize,
    /// Iterations in which it was the slowest.
    pub slowest: usize,
    /// Iterations of the points it took part in.
    pub of: usize,
    /// Iterations it would be slowest in by chance (sum of 1/p per iteration; per node, the
    /// node's ranks' shares).
    pub expected: f64,
    /// Median of (time − fastest) / fastest over the iterations it was slowest in.
    pub excess_median: f64,
    /// Spikes it was the slowest in.
    pub spikes: usize,
    /// Slowest in more than halfway between chance and always.
    pub persistent: bool,
}

/// The analysis of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stragglers {
    /// Points of 2 or more ranks with samples.
    pub points: usize,
    pub iterations: usize,
    pub spikes: usize,
    /// Per rank that was ever the slowest, most often first.
    pub ranks: Vec<Straggler>,
    /// Per node (from `rank_nodes`), when the run spans several.
    pub nodes: Vec<Straggler>,
    /// First timed iteration's time over the median of the others: median and largest over
    /// the points with 2 or more iterations (every point, whatever its world).
    pub first_iteration: Option<(f64, f64)>,
}

/// Analyses `points`, ranks by their launch rank; `rank_nodes[r]` is launch rank r's node
/// (empty: one node) where a point does not give its own.
pub fn analyze(points: &[PointIters], rank_nodes: &[usize]) -> Stragglers {
    let node_of = |p: &PointIters, r: usize| match p.nodes.get(r) {
        Some(&n) => n,
        None => rank_nodes.get(p.launch_rank(r)).copied().unwrap_or(0),
    };
    let most_nodes = (points.iter().flat_map(|p| p.nodes.iter()))
        .chain(rank_nodes)
        .copied()
        .max();
    let nodes = most_nodes.map_or(1, |n| n + 1);
    let mut ranks = Tally::default();
    let mut per_node = Tally::default();
    let (mut counted, mut iterations, mut spikes) = (0, 0, 0);
    for p in points
        .iter()
        .filter(|p| p.world >= 2 && !p.iters.is_empty())
    {
        counted += 1;
        iterations += p.iters.len();
        let median = median(p.iters.iter().map(|s| s.time_us).collect());
        let mut on_node: std::collections::BTreeMap<usize, usize> = Default::default();
        for r in 0..p.world {
            ranks.member(p.launch_rank(r), p.iters.len(), 1.0 / p.world as f64);
            *on_node.entry(node_of(p, r)).or_default() += 1;
        }
        for (node, n) in on_node {
            per_node.member(node, p.iters.len(), n as f64 / p.world as f64);
        }
        for s in p.iters {
            let spike = s.time_us > SPIKE * median;
            spikes += usize::from(spike);
            let excess = (s.time_us - s.fastest_us) / s.fastest_us.max(f64::MIN_POSITIVE);
            ranks.slowest(p.launch_rank(s.slowest_rank), excess, spike);
            per_node.slowest(node_of(p, s.slowest_rank), excess, spike);
        }
    }
    Stragglers {
        points: counted,
        iterations,
        spikes,
        ranks: ranks.finish(),
        nodes: if nodes > 1 {
            per_node.finish()
        } else {
            Vec::new()
        },
        first_iteration: first_iteration(points),
    }
}

/// Running counts per id.
#[derive(Default)]
struct Tally {
    rows: std::collections::BTreeMap<usize, (Straggler, Vec<f64>)>,
}

impl Tally {
    fn row(&mut self, id: usize) -> &mut (Straggler, Vec<f64>) {
        self.rows.entry(id).or_insert_with(|| {
            let s = Straggler {
                id,
                slowest: 0,
                of: 0,
                expected: 0.0,
                excess_median: f64::NAN,
                spikes: 0,
                persistent: false,
            };
            (s, Vec::new())
        })
    }

    fn member(&mut self, id: usize, iters: usize, share: f64) {
        let (s, _) = self.row(id);
        s.of += iters;
        s.expected += share * iters as f64;
    }

    fn slowest(&mut self, id: usize, excess: f64, spike: bool) {
        let (s, excesses) = self.row(id);
        s.slowest += 1;
        s.spikes += usize::from(spike);
        if excess.is_finite() {
            excesses.push(excess);
        }
    }

    /// The ids that were ever slowest, most often first.
    fn finish(self) -> Vec<Straggler> {
        let mut out: Vec<Straggler> = self
            .rows
            .into_values()
            .filter(|(s, _)| s.slowest > 0)
            .map(|(mut s, excesses)| {
                s.excess_median = median(excesses);
                let halfway = s.expected + 0.5 * (s.of as f64 - s.expected);
                s.persistent = s.of > 0 && s.slowest as f64 > halfway;
                s
            })
            .collect();
        out.sort_by(|a, b| b.slowest.cmp(&a.slowest).then(a.id.cmp(&b.id)));
        out
    }
}

/// (median, largest) over points of iteration 0's time / the median of the others.
fn first_iteration(points: &[PointIters]) -> Option<(f64, f64)> {
    let ratios: Vec<f64> = points
        .iter()
        .filter(|p| p.iters.len() >= 2)
        .map(|p| {
            let rest = median(p.iters[1..].iter().map(|s| s.time_us).collect());
            p.iters[0].time_us / rest
        })
        .filter(|r| r.is_finite())
        .collect();
    let largest = ratios.iter().copied().fold(f64::NAN, f64::max);
    (!ratios.is_empty()).then(|| (median(ratios), largest))
}

fn median(mut v: Vec<f64>) -> f64 {
    crate::stats::median_of(&mut v)
}

#[cfg(test)]
#[path = "straggler_tests.rs"]
mod tests;
