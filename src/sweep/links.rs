//! Slow links from a `--pairs` run. Every pair of nodes was measured alone (one rank on each),
//! so a pair's bus bandwidth at the largest size is the bandwidth of the path between them.
//! A pair is slow when its bandwidth, relative to the reference pair, is below [`SLOW_RATIO`]
//! (taking the median of that ratio over every op measured). A node that is in most of its
//! pairs' slow list is the likely cause: its NIC, cable or switch port.
//!
//! The reference is the 75th percentile of the pairs' bandwidths, not their median: one slow
//! node among N slows N - 1 of the N(N - 1)/2 pairs, which is most of them for N = 3, and the
//! median pair would then be a slow one. The 75th percentile stays on healthy pairs as long as
//! more than a quarter of the pairs are healthy.

use crate::model::record::RankSummary;
use crate::units::format_size;

/// A pair below this fraction of the reference pair's bandwidth is reported as slow: ordinary
/// spread between healthy links on one fabric is a few percent, a degraded link (a lane down,
/// a link trained at a lower speed, a congested uplink) costs a quarter or more.
pub const SLOW_RATIO: f64 = 0.8;

/// One pair's bandwidth for one curve (op, algo, dtype, placement) at its largest size.
#[derive(Clone, Debug, PartialEq)]
pub struct PairBandwidth {
    pub curve: String,
    pub a: usize,
    pub b: usize,
    pub bytes: usize,
    pub busbw_gbps: f64,
}

/// A pair's standing against the reference (healthy) pair.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkStanding {
    pub a: usize,
    pub b: usize,
    /// Median over curves of this pair's busbw / the reference pair's busbw.
    pub ratio: f64,
    /// This pair's and the reference pair's busbw for the first curve, for the report.
    pub busbw_gbps: f64,
    pub reference_gbps: f64,
    pub bytes: usize,
}

/// Keeps, for every curve and pair, the point with the largest size.
pub fn largest_sizes(points: &[PairBandwidth]) -> Vec<PairBandwidth> {
    let mut kept: Vec<PairBandwidth> = Vec::new();
    for p in points {
        match kept
            .iter_mut()
            .find(|k| k.curve == p.curve && (k.a, k.b) == (p.a, p.b))
        {
            Some(k) if k.bytes < p.bytes => *k = p.clone(),
            Some(_) => {}
            None => kept.push(p.clone()),
        }
    }
    kept
}

/// The `q` quantile of `v` (sorted here; numpy's default rule, [`crate::stats::percentile`]).
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    crate::stats::percentile(v, q)
}

fn median(v: &mut [f64]) -> f64 {
    quantile(v, 0.5)
}

/// The quantile of the pairs' bandwidths that stands for a healthy pair.
const REFERENCE_QUANTILE: f64 = 0.75;

/// Every pair's standing, from the largest-size points of each curve.
pub fn standings(largest: &[PairBandwidth]) -> Vec<LinkStanding> {
    let mut curves: Vec<&str> = Vec::new();
    for p in largest {
        if !curves.contains(&p.curve.as_str()) {
            curves.push(&p.curve);
        }
    }
    let curve_reference = |c: &str| {
        let mut v: Vec<f64> = largest
            .iter()
            .filter(|p| p.curve == c)
            .map(|p| p.busbw_gbps)
            .collect();
        quantile(&mut v, REFERENCE_QUANTILE)
    };
    let references: Vec<f64> = curves.iter().map(|c| curve_reference(c)).collect();
    let mut pairs: Vec<(usize, usize)> = largest.iter().map(|p| (p.a, p.b)).collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
        .into_iter()
        .map(|(a, b)| {
            let mine: Vec<&PairBandwidth> =
                largest.iter().filter(|p| (p.a, p.b) == (a, b)).collect();
            let mut ratios: Vec<f64> = mine
                .iter()
                .map(|p| {
                    let at = curves.iter().position(|c| *c == p.curve).unwrap_or(0);
                    p.busbw_gbps / references[at]
                })
                .collect();
            let first = mine[0];
            LinkStanding {
                a,
                b,
                ratio: median(&mut ratios),
                busbw_gbps: first.busbw_gbps,
                reference_gbps: curve_reference(&first.curve),
                bytes: first.bytes,
            }
        })
        .collect()
}

/// Nodes that are in more than half of their pairs' slow list (and in at least two slow
/// pairs): with only two nodes the one link cannot be pinned on either end.
pub fn suspect_nodes(standings: &[LinkStanding], nodes: usize) -> Vec<usize> {
    (0..nodes)
        .filter(|&n| {
            let mine: Vec<&LinkStanding> =
                standings.iter().filter(|s| s.a == n || s.b == n).collect();
            let slow = mine.iter().filter(|s| s.ratio < SLOW_RATIO).count();
            slow >= 2 && 2 * slow > mine.len()
        })
        .collect()
}

/// The report lines: each slow link, each suspect node, or that all links look alike.
pub fn report(standings: &[LinkStanding], hosts: &[String]) -> Vec<String> {
    let host = |n: usize| hosts.get(n).map_or("?", String::as_str);
    let mut lines = Vec::new();
    for s in standings.iter().filter(|s| s.ratio < SLOW_RATIO) {
        lines.push(format!(
            "slow link: {} <-> {}: {:.3} GB/s busbw at {}, {:.0}% below the healthy pairs ({:.3} GB/s, 75th percentile)",
            host(s.a),
            host(s.b),
            s.busbw_gbps,
            format_size(s.bytes),
            (1.0 - s.ratio) * 100.0,
            s.reference_gbps
        ));
    }
    for n in suspect_nodes(standings, hosts.len()) {
        let mine = standings.iter().filter(|s| s.a == n || s.b == n);
        let slow = mine.clone().filter(|s| s.ratio < SLOW_RATIO).count();
        lines.push(format!(
            "slow node: {}: {slow} of its {} pairs are slow; its network path is the likely cause",
            host(n),
            mine.count()
        ));
    }
    if lines.is_empty() && !standings.is_empty() {
        let worst = standings
            .iter()
            .map(|s| s.ratio)
            .fold(f64::INFINITY, f64::min);
        lines.push(format!(
            "links: all {} node pairs within {:.0}% of the healthy pairs (slowest at {:.0}%)",
            standings.len(),
            (1.0 - SLOW_RATIO) * 100.0,
            worst * 100.0
        ));
    }
    lines
}

/// For each node of a point: its slowest rank's own median time over the point's median time
/// (the slowest rank per iteration). A node whose ranks finish early waits for the others.
pub fn node_ratios(ranks: &[RankSummary], point_median_us: f64) -> Vec<(usize, f64)> {
    let mut nodes: Vec<usize> = ranks.iter().map(|r| r.node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
        .into_iter()
        .map(|n| {
            let slowest = ranks
                .iter()
                .filter(|r| r.node == n)
                .map(|r| r.time_us_median)
                .fold(0.0, f64::max);
            (n, slowest / point_median_us)
        })
        .collect()
}

/// One line: each node's median ratio over the multi-node points, e.g.
/// "per node (own time / point time, median over 12 points): a 1.00, b 0.97".
pub fn node_summary(ratios: &[(usize, f64)], hosts: &[String]) -> Option<String> {
    if ratios.is_empty() {
        return None;
    }
    let points = ratios.iter().filter(|(n, _)| *n == 0).count();
    let parts: Vec<String> = (0..hosts.len())
        .filter_map(|n| {
            let mut v: Vec<f64> = ratios.iter().filter(|r| r.0 == n).map(|r| r.1).collect();
            (!v.is_empty()).then(|| format!("{} {:.2}", hosts[n], median(&mut v)))
        })
        .collect();
    Some(format!(
        "per node (slowest rank's own median / point median, median over {points} points): {}",
        parts.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pb(curve: &str, a: usize, b: usize, bytes: usize, gbps: f64) -> PairBandwidth {
        PairBandwidth {
            curve: curve.into(),
            a,
            b,
            bytes,
            busbw_gbps: gbps,
        }
    }

    fn hosts(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("h{i}")).collect()
    }

    #[test]
    fn a_node_with_a_slow_nic_is_named_with_its_links() {
        // Four nodes; every pair with node 2 runs at half speed.
        let mut points = Vec::new();
        for a in 0..4 {
            for b in a + 1..4 {
                let gbps = if a == 2 || b == 2 { 5.0 } else { 10.0 };
                points.push(pb("ar", a, b, 1 << 20, 1.0));
                points.push(pb("ar", a, b, 64 << 20, gbps));
            }
        }
        let s = standings(&largest_sizes(&points));
        assert_eq!(s.len(), 6);
        assert_eq!(suspect_nodes(&s, 4), vec![2]);
        let lines = report(&s, &hosts(4));
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert!(lines[0].starts_with("slow link: h0 <-> h2: 5.000 GB/s busbw at 64 MiB, 50% below"));
        assert!(lines[3].starts_with("slow node: h2: 3 of its 3 pairs are slow"));
    }

    #[test]
    fn two_nodes_name_the_link_only_and_healthy_links_say_so() {
        let s = standings(&[pb("ar", 0, 1, 8, 1.0)]);
        let lines = report(&s, &hosts(2));
        assert_eq!(
            lines,
            vec!["links: all 1 node pairs within 20% of the healthy pairs (slowest at 100%)"]
        );
        // Three nodes, one slow node: two of three pairs are slow, and still named.
        let pts = [
            pb("ar", 0, 1, 8, 10.0),
            pb("ar", 0, 2, 8, 5.0),
            pb("ar", 1, 2, 8, 5.0),
        ];
        let s = standings(&pts);
        assert_eq!(suspect_nodes(&s, 3), vec![2]);
        assert_eq!(report(&s, &hosts(3)).len(), 3);
        // Three nodes, one slow link: the link is named, neither end is blamed.
        let pts = [
            pb("ar", 0, 1, 8, 10.0),
            pb("ar", 0, 2, 8, 10.0),
            pb("ar", 1, 2, 8, 4.0),
        ];
        let s = standings(&pts);
        assert!(suspect_nodes(&s, 3).is_empty());
        let lines = report(&s, &hosts(3));
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].contains("h1 <-> h2") && lines[0].contains("60% below"),
            "{lines:?}"
        );
    }

    #[test]
    fn nodes_are_summarised_by_their_slowest_rank() {
        let rank = |node: usize, t: f64| RankSummary {
            rank: 0,
            global_rank: 0,
            node,
            time_us_median: t,
            time_us_mean: t,
            time_us_max: t,
            wrong: 0,
        };
        let r = node_ratios(&[rank(0, 9.0), rank(0, 10.0), rank(1, 5.0)], 10.0);
        assert_eq!(r, vec![(0, 1.0), (1, 0.5)]);
        let line = node_summary(&r, &hosts(2)).unwrap();
        assert_eq!(line, "per node (slowest rank's own median / point median, median over 1 points): h0 1.00, h1 0.50");
        assert!(node_summary(&[], &hosts(2)).is_none());
    }

    #[test]
    fn the_ratio_is_the_median_over_curves() {
        // Pair (0,1) is slow for one op only out of three: not reported.
        let mut pts = Vec::new();
        for (c, slow) in [("ar", 2.0), ("ag", 10.0), ("rs", 10.0)] {
            pts.push(pb(c, 0, 1, 8, slow));
            pts.push(pb(c, 0, 2, 8, 10.0));
            pts.push(pb(c, 1, 2, 8, 10.0));
        }
        let s = standings(&pts);
        assert!(s.iter().all(|l| l.ratio >= SLOW_RATIO), "{s:?}");
    }
}
