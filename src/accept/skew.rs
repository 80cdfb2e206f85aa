//! Rank and node skew of one point, from ranks.csv (each rank's own median time).
//!
//! Rank skew is `(slowest − fastest) / fastest` over the ranks' median times. Node skew is the
//! same over nodes, a node's time being the median of its ranks' medians. The node of a rank is
//! ranks.csv's `node` column; in folders written before it existed (every rank on node 0 while
//! the point spans several nodes) ranks are taken to be placed in blocks (ranks
//! `0..world/nodes` on node 0, ...), as mpirun, srun and torchrun place them by default. A
//! point on one node has no node to compare with: its node skew is its rank skew.

use super::measure::Observation;
use super::placement::node_of;
use super::verdict::Slow;
use crate::model::record::RankSummary;

/// (skew, index of the slowest) over `(index, time)` pairs; `None` with fewer than two usable
/// times.
fn spread(times: &[(usize, f64)]) -> Option<(f64, usize)> {
    let ok: Vec<(usize, f64)> = times
        .iter()
        .copied()
        .filter(|(_, t)| t.is_finite() && *t > 0.0)
        .collect();
    if ok.len() < 2 {
        return None;
    }
    let slow = ok.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let fast = ok.iter().map(|x| x.1).min_by(f64::total_cmp)?;
    Some(((slow.1 - fast) / fast, slow.0))
}

/// Rank skew and the slowest rank (within the group).
pub fn rank_skew(ranks: &[RankSummary]) -> Option<(f64, usize)> {
    let times: Vec<(usize, f64)> = ranks.iter().map(|r| (r.rank, r.time_us_median)).collect();
    spread(&times)
}

/// Each node's time: the median of its ranks' median times, by node index.
pub fn node_times(ranks: &[RankSummary], world: usize, nodes: usize) -> Vec<(usize, f64)> {
    if ranks.is_empty() {
        return Vec::new();
    }
    let mut by_node: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    for (r, node) in ranks.iter().zip(node_of(ranks, world, nodes)) {
        if r.time_us_median.is_finite() {
            by_node.entry(node).or_default().push(r.time_us_median);
        }
    }
    by_node
        .into_iter()
        .map(|(n, mut v)| {
            v.sort_by(f64::total_cmp);
            (n, crate::stats::median(&v))
        })
        .collect()
}

/// Node skew and the slowest node; on one node, the rank skew and slowest rank.
pub fn node_skew(ranks: &[RankSummary], world: usize, nodes: usize) -> Option<(f64, usize)> {
    let times = node_times(ranks, world, nodes);
    if times.len() <= 1 {
        return rank_skew(ranks);
    }
    spread(&times)
}

/// The rank slowest in most repeats, with its median excess over the fastest rank, its rank in
/// the launch and its host.
pub fn slow_rank(obs: &[Observation]) -> Option<Slow> {
    let per_repeat: Vec<Option<(usize, f64)>> = obs
        .iter()
        .map(|o| {
            let times: Vec<(usize, f64)> =
                o.ranks.iter().map(|r| (r.rank, r.time_us_median)).collect();
            excess_of_slowest(&times)
        })
        .collect();
    let mut slow = most_often_slowest(&per_repeat)?;
    let seen = obs
        .iter()
        .find_map(|o| Some((o, o.ranks.iter().find(|r| r.rank == slow.id)?)));
    if let Some((o, r)) = seen {
        slow.global_rank = Some(r.global_rank);
        slow.host = o.hosts.get(r.node).cloned();
    }
    Some(slow)
}

/// The node slowest in most repeats, with its median excess over the fastest node and its host.
pub fn slow_node(obs: &[Observation], world: usize, nodes: usize) -> Option<Slow> {
    let per_repeat: Vec<Option<(usize, f64)>> = obs
        .iter()
        .map(|o| {
            let times = node_times(&o.ranks, world, nodes);
            if times.len() <= 1 {
                return None;
            }
            excess_of_slowest(&times)
        })
        .collect();
    let mut slow = most_often_slowest(&per_repeat)?;
    slow.host = obs.iter().find_map(|o| o.hosts.get(slow.id).cloned());
    Some(slow)
}

/// (slowest index, its excess over the fastest in percent).
fn excess_of_slowest(times: &[(usize, f64)]) -> Option<(usize, f64)> {
    spread(times).map(|(skew, id)| (id, skew * 100.0))
}

fn most_often_slowest(per_repeat: &[Option<(usize, f64)>]) -> Option<Slow> {
    let seen: Vec<(usize, f64)> = per_repeat.iter().flatten().copied().collect();
    let mut ids: Vec<usize> = seen.iter().map(|s| s.0).collect();
    ids.sort_unstable();
    ids.dedup();
    // Most repeats first; the lower id on a tie.
    let id = ids
        .into_iter()
        .max_by_key(|id| (seen.iter().filter(|s| s.0 == *id).count(), usize::MAX - id))?;
    let mut excess: Vec<f64> = seen.iter().filter(|s| s.0 == id).map(|s| s.1).collect();
    excess.sort_by(f64::total_cmp);
    Some(Slow {
        id,
        global_rank: None,
        host: None,
        excess_pct: crate::stats::median(&excess),
        slowest_in: excess.len(),
        repeats: per_repeat.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(times: &[f64]) -> Vec<RankSummary> {
        times
            .iter()
            .enumerate()
            .map(|(rank, &t)| RankSummary {
                rank,
                global_rank: rank + 10,
                node: 0,
                time_us_median: t,
                time_us_mean: t,
                time_us_max: t,
                wrong: 0,
            })
            .collect()
    }

    fn obs(t: &[f64], nodes: &[usize], repeat: usize) -> Observation {
        let mut r = ranks(t);
        for (x, &n) in r.iter_mut().zip(nodes) {
            x.node = n;
        }
        Observation {
            repeat,
            record: crate::report::summary_csv::tests::awkward_record(),
            ranks: r,
            hosts: vec!["alpha".into(), "beta".into()],
            slowest: None,
            slowest_node: None,
        }
    }

    #[test]
    fn rank_skew_is_relative_to_the_fastest() {
        let (s, slow) = rank_skew(&ranks(&[10.0, 12.5, 11.0])).unwrap();
        assert!((s - 0.25).abs() < 1e-12);
        assert_eq!(slow, 1);
        assert_eq!(rank_skew(&ranks(&[10.0])), None);
        assert_eq!(rank_skew(&ranks(&[10.0, f64::NAN])), None);
    }

    #[test]
    fn nodes_come_from_ranks_csv_else_from_blocks() {
        // Recorded: ranks 0 and 2 on node 0 (10, 20 -> 15), ranks 1 and 3 on node 1 (12, 24 -> 18).
        let o = obs(&[10.0, 12.0, 20.0, 24.0], &[0, 1, 0, 1], 0);
        assert_eq!(node_times(&o.ranks, 4, 2), vec![(0, 15.0), (1, 18.0)]);
        let (s, slow) = node_skew(&o.ranks, 4, 2).unwrap();
        assert!((s - 0.2).abs() < 1e-12 && slow == 1);
        // Not recorded (all node 0) on 2 nodes: blocks 0,1 (10, 12 -> 11) and 2,3 (20, 24 -> 22).
        let r = ranks(&[10.0, 12.0, 20.0, 24.0]);
        assert_eq!(node_times(&r, 4, 2), vec![(0, 11.0), (1, 22.0)]);
        let (s, slow) = node_skew(&r, 4, 2).unwrap();
        assert!((s - 1.0).abs() < 1e-12 && slow == 1);
        // One node: the rank skew.
        assert_eq!(node_skew(&r, 4, 1), rank_skew(&r));
    }

    #[test]
    fn the_slow_rank_is_the_one_slowest_most_often_and_named_by_host() {
        let o = vec![
            obs(&[10.0, 11.0], &[0, 1], 0),
            obs(&[10.0, 12.0], &[0, 1], 1),
            obs(&[13.0, 10.0], &[0, 1], 2),
        ];
        let s = slow_rank(&o).unwrap();
        assert_eq!((s.id, s.slowest_in, s.repeats), (1, 2, 3));
        assert!((s.excess_pct - 15.0).abs() < 1e-9, "{s:?}");
        assert_eq!((s.global_rank, s.host.as_deref()), (Some(11), Some("beta")));
        let n = slow_node(&o, 2, 2).unwrap();
        assert_eq!(
            (n.id, n.host.as_deref(), n.global_rank),
            (1, Some("beta"), None)
        );
        assert_eq!(slow_rank(&[]), None);
    }
}
