//! Stragglers in a verdict: the values, notes and culprits of the slowest-rank and
//! slowest-node bias checks (from each point's per-iteration slowest ranks), and verdict.json's
//! `stragglers` section: per judged results folder, the report's analysis over time
//! ([`crate::report::straggler`]) with every rank and node named by its host.

use serde::Serialize;

use super::measure::{GroupKey, Observation, PointGroup, RunData, SlowestRank};
use super::reason::Culprit;
use crate::report::straggler::Straggler;

/// The bias judged in one repeat: of the slowest rank, or (`node`) of the slowest node; a
/// point on one node is judged by its slowest rank.
pub fn bias_value(node: bool, o: &Observation, k: &GroupKey) -> Result<f64, String> {
    // One rank is never a straggler among others.
    if k.world < 2 {
        return Ok(0.0);
    }
    let (slowest, what) = if node && k.nodes > 1 {
        (o.slowest_node, "per-iteration samples or node placement")
    } else {
        (o.slowest, "per-iteration samples")
    };
    slowest
        .map(|s| s.bias)
        .ok_or_else(|| format!("no {what} for the point"))
}

/// Which rank or node was slowest most often, per repeat: `node 1 (b) slowest in 92% of
/// iterations (50% by chance)`.
pub fn bias_note(g: &PointGroup, node: bool) -> Option<String> {
    let by_node = node && g.key.nodes > 1;
    let parts: Vec<String> = (g.obs.iter())
        .filter_map(|o| Some((o, slowest_of(o, by_node)?)))
        .map(|(o, s)| {
            let who = if by_node {
                named("node", s.rank, o.hosts.get(s.rank))
            } else {
                format!("rank {}", s.rank)
            };
            let chance = if by_node {
                format!(" ({:.0}% by chance)", s.chance * 100.0)
            } else {
                String::new()
            };
            format!("{who} slowest in {:.0}%{chance}", s.share * 100.0)
        })
        .collect();
    let one_node = (node && g.key.nodes <= 1 && g.key.world >= 2)
        .then_some("one node: judged as the slowest rank's bias");
    let slowest = (!parts.is_empty()).then(|| format!("{} of iterations", parts.join(", ")));
    match (one_node, slowest) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.map(str::to_string).or(b),
    }
}

fn slowest_of(o: &Observation, node: bool) -> Option<SlowestRank> {
    if node {
        o.slowest_node
    } else {
        o.slowest
    }
}

/// `node 1 (host-b)`, or `node 1` where the host is not known.
fn named(kind: &str, id: usize, host: Option<&String>) -> String {
    match host {
        Some(h) => format!("{kind} {id} ({h})"),
        None => format!("{kind} {id}"),
    }
}

/// The rank or node a failed bias check names: the one slowest most often in the most
/// repeats, the lower id on a tie.
pub fn bias_culprit(g: &PointGroup, node: bool) -> Option<Culprit> {
    let by_node = node && g.key.nodes > 1;
    let ids: Vec<(usize, &Observation)> = (g.obs.iter())
        .filter_map(|o| Some((slowest_of(o, by_node)?.rank, o)))
        .collect();
    let count = |id: usize| ids.iter().filter(|(i, _)| *i == id).count();
    let (id, o) = ids
        .iter()
        .copied()
        .max_by_key(|(id, _)| (count(*id), usize::MAX - id))?;
    if by_node {
        return Some(Culprit {
            kind: "node",
            id,
            global_rank: None,
            host: o.hosts.get(id).cloned(),
        });
    }
    let row = o.ranks.iter().find(|r| r.rank == id);
    Some(Culprit {
        kind: "rank",
        id,
        global_rank: row.map(|r| r.global_rank),
        host: row.and_then(|r| o.hosts.get(r.node).cloned()),
    })
}

/// One results folder's stragglers over time (verdict.json `stragglers[]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunStragglers {
    /// The results folder, as in `runs[].path`.
    pub run: String,
    /// Points of 2 or more ranks with per-iteration samples, and their iterations.
    pub points: usize,
    pub iterations: usize,
    /// Iterations over 2x their point's median.
    pub spikes: usize,
    /// The first timed iteration's time over the median of the rest of its point.
    pub first_iteration: Option<FirstIteration>,
    /// Every rank that was ever the slowest of an iteration, most often first.
    pub ranks: Vec<StragglerRow>,
    /// The same per node, when the run spans several.
    pub nodes: Vec<StragglerRow>,
}

/// The first-iteration effect over a run's points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FirstIteration {
    pub median_ratio: f64,
    pub max_ratio: f64,
}

/// One rank or node as the slowest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StragglerRow {
    /// The rank (its rank in the launch) or the node index (into meta.json's `hosts`).
    pub id: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Iterations it was the slowest of, of the iterations of the points it took part in.
    pub slowest: usize,
    pub of: usize,
    /// `slowest / of`, and the share it would have by chance.
    pub share: f64,
    pub chance: f64,
    /// Median of (its time − the fastest rank's) / the fastest's when it was the slowest.
    pub excess_median: Option<f64>,
    /// Spikes it was the slowest of.
    pub spikes: usize,
    /// Slowest in more than halfway between chance and every iteration.
    pub persistent: bool,
}

/// The section: every folder with per-iteration samples of 2 or more ranks.
pub fn section(runs: &[RunData]) -> Vec<RunStragglers> {
    runs.iter()
        .filter(|r| r.stragglers.points > 0)
        .map(|r| {
            let s = &r.stragglers;
            let node_host = |n: usize| r.hosts.get(n).cloned();
            let rank_host = |k: usize| r.rank_nodes.get(k).and_then(|&n| node_host(n));
            RunStragglers {
                run: r.dir.display().to_string(),
                points: s.points,
                iterations: s.iterations,
                spikes: s.spikes,
                first_iteration: s.first_iteration.map(|(median, max)| FirstIteration {
                    median_ratio: median,
                    max_ratio: max,
                }),
                ranks: s.ranks.iter().map(|x| row(x, rank_host(x.id))).collect(),
                nodes: s.nodes.iter().map(|x| row(x, node_host(x.id))).collect(),
            }
        })
        .collect()
}

fn row(s: &Straggler, host: Option<String>) -> StragglerRow {
    let of = s.of.max(1) as f64;
    StragglerRow {
        id: s.id,
        host,
        slowest: s.slowest,
        of: s.of,
        share: s.slowest as f64 / of,
        chance: s.expected / of,
        excess_median: s.excess_median.is_finite().then_some(s.excess_median),
        spikes: s.spikes,
        persistent: s.persistent,
    }
}

/// A note per persistent straggler: `r1: node 1 (b) persistently slowest: 98% of 400
/// iterations (50% by chance), +12.0% over the fastest (median)`.
pub fn notes(section: &[RunStragglers]) -> Vec<String> {
    let mut out = Vec::new();
    for r in section {
        let rows = (r.nodes.iter().map(|x| ("node", x)))
            .chain(r.ranks.iter().map(|x| ("rank", x)))
            .filter(|(_, x)| x.persistent);
        for (kind, x) in rows {
            let excess = x
                .excess_median
                .map(|e| format!(", +{:.1}% over the fastest (median)", e * 100.0))
                .unwrap_or_default();
            out.push(format!(
                "{}: {} persistently slowest: {:.0}% of {} iterations ({:.0}% by chance){excess}",
                r.run,
                named(kind, x.id, x.host.as_ref()),
                x.share * 100.0,
                x.of,
                x.chance * 100.0
            ));
        }
    }
    out
}

#[cfg(test)]
#[path = "stragglers_tests.rs"]
mod tests;
