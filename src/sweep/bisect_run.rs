//! `sweep --bisect` in a multi-host launch: rank 0 walks the [`Bisection`], measuring each
//! group of nodes (one rank on each) at the plan's one point, and tells every rank which nodes
//! the next point holds before it starts; the other ranks measure where they are one of them.
//! Every point is written as any point is; the rounds and the verdict go to the console and to
//! meta.json's `bisect`.

use std::time::Duration;

use crate::backend::host::algo::Group;
use crate::backend::host::transport::{Combine, Transport};
use crate::collective::Shape;
use crate::error::{Error, Result};
use crate::meta::{BisectRound, BisectSummary};
use crate::model::call::BackendKind;
use crate::model::plan::{Plan, Point};
use crate::stats::loop_time_of;
use crate::sweep::bisect::{Bisection, Round, Verdict};
use crate::sweep::cluster::Cluster;
use crate::sweep::distributed_point::{gather, member_part, start_limit};
use crate::sweep::lead::Lead;
use crate::sweep::rank::RankBuffers;
use crate::sweep::summarize::summarize_point;

/// The point every group is measured at: the largest size of the plan's first curve.
pub fn template(plan: &Plan) -> Option<Point> {
    let first = plan.points.first()?;
    let same = |p: &&Point| {
        let (a, b) = (&p.call, &first.call);
        (a.op, a.algo, a.dtype, a.redop, a.root, p.in_place)
            == (b.op, b.algo, b.dtype, b.redop, b.root, first.in_place)
    };
    plan.points
        .iter()
        .filter(same)
        .max_by_key(|p| p.call.shape.bytes)
        .cloned()
}

/// `template` for a group of `m` nodes, one rank on each.
fn sized(template: &Point, m: usize) -> Point {
    let mut p = template.clone();
    (p.world, p.nodes, p.pair) = (m, m, None);
    let c = &mut p.call;
    c.shape = Shape::new(c.op, c.dtype, p.requested, m);
    p
}

/// Rank 0's word in place of a group where the bisection is over.
const OVER: u64 = u64::MAX;

/// The message that starts a group's point: its index, its size, its nodes, then zeros, in
/// `2 + nodes` words (every rank knows the launch's node count, so the length is fixed).
fn group_message(k: usize, group: &[usize], nodes: usize) -> Vec<u64> {
    let mut words = vec![0u64; 2 + nodes];
    words[0] = k as u64;
    words[1] = group.len() as u64;
    for (w, &n) in words[2..].iter_mut().zip(group) {
        *w = n as u64;
    }
    words
}

/// A group message read back: `None` for [`OVER`]; an error for a message no rank 0 sends.
fn read_group(words: &[u64], nodes: usize) -> Result<Option<Vec<usize>>> {
    if words.first() == Some(&OVER) {
        return Ok(None);
    }
    let m = words.get(1).map_or(0, |&m| m as usize);
    let group: Vec<usize> = words.iter().skip(2).take(m).map(|&n| n as usize).collect();
    let repeated = (1..group.len()).any(|i| group[..i].contains(&group[i]));
    if m < 2 || group.len() != m || repeated || group.iter().any(|&n| n >= nodes) {
        return Err(Error::Rank(format!(
            "rank 0 sent a bisection group {words:?}"
        )));
    }
    Ok(Some(group))
}

/// The first rank of each node of `group`.
fn members(c: &Cluster, group: &[usize]) -> Vec<usize> {
    group.iter().map(|&n| c.topology.ranks_on(n)[0]).collect()
}

/// Rank 0: every round, every group, and the summary for meta.json.
pub fn lead(template: &Point, c: &mut Cluster, lead: &mut Lead, timeout: Duration) -> Result<()> {
    let nodes = c.topology.nodes();
    let mut b = Bisection::new(nodes).map_err(Error::Usage)?;
    let mut bufs = RankBuffers::default();
    let mut points = Vec::new();
    while let Some(groups) = b.next() {
        let mut busbw = Vec::new();
        for g in &groups {
            let k = lead.out.points();
            let words = group_message(k, g, nodes);
            for r in 1..c.transport.nranks() {
                c.transport.tcp().send(r, bytemuck::cast_slice(&words))?;
            }
            busbw.push(lead_group(
                c,
                g,
                sized(template, g.len()),
                (&mut bufs, lead),
                timeout,
            )?);
            points.push(k);
        }
        b.record(groups, busbw);
        if let Some(r) = b.rounds.last() {
            lead.console
                .note(&round_note(b.rounds.len(), r, &c.topology.hosts));
        }
    }
    for r in 1..c.transport.nranks() {
        c.transport.tcp().send(r, bytemuck::cast_slice(&[OVER]))?;
    }
    let summary = summarize(&b, &points, &c.topology.hosts);
    lead.console.note(&verdict_note(&summary));
    lead.out.set_bisect(summary);
    Ok(())
}

/// One group's point: measured, gathered, written and printed; its busbw.
fn lead_group(
    c: &mut Cluster,
    group: &[usize],
    point: Point,
    (bufs, lead): (&mut RankBuffers, &mut Lead),
    timeout: Duration,
) -> Result<f64> {
    let hosts: Vec<&str> = group
        .iter()
        .map(|&n| c.topology.hosts[n].as_str())
        .collect();
    lead.console
        .running(&format!("{} on {}", point.describe(), hosts.join(",")));
    let (members, rank_times, wrongs, loops) = gather(c, &point, members(c, group), bufs, timeout)?;
    let key = point.key(BackendKind::Host.name());
    let (mut rec, samples, mut per_rank) = summarize_point(key, &point, &rank_times, &wrongs)?;
    rec.loop_time_us = loop_time_of(&loops, point.timing.rank);
    for (s, &global) in per_rank.iter_mut().zip(&members) {
        s.global_rank = global;
        s.node = c.topology.node_of[global];
    }
    lead.point(&rec, &samples, &per_rank)?;
    Ok(rec.busbw_gbps)
}

/// A rank other than 0: each group rank 0 names, measured where this rank is its node's first.
pub fn follow(template: &Point, c: &mut Cluster, timeout: Duration) -> Result<()> {
    let nodes = c.topology.nodes();
    let mut bufs = RankBuffers::default();
    let mut limit = start_limit(None, timeout);
    loop {
        let t = c.transport.tcp();
        t.wait_message(0, limit)?;
        let mut words = vec![0u64; 2 + nodes];
        t.recv(0, bytemuck::cast_slice_mut(&mut words[..1]), Combine::Copy)?;
        if words[0] == OVER {
            return Ok(());
        }
        t.recv(0, bytemuck::cast_slice_mut(&mut words[1..]), Combine::Copy)?;
        let Some(group) = read_group(&words, nodes)? else {
            return Ok(());
        };
        let point = sized(template, group.len());
        let members = members(c, &group);
        if let Some(me) = members.iter().position(|&r| r == c.rank) {
            let g = Group { members, me };
            member_part(&mut c.transport, &g, &point, &mut bufs)?;
        }
        limit = start_limit(Some(&point), timeout);
    }
}

/// `bisect round 2: nodes a,b 9.8 GB/s; nodes c,d 2.4 GB/s (25%)`.
fn round_note(n: usize, r: &Round, hosts: &[String]) -> String {
    let fastest = r.busbw_gbps.iter().copied().fold(f64::NAN, f64::max);
    let parts: Vec<String> = (r.groups.iter().zip(&r.busbw_gbps))
        .map(|(g, bw)| {
            let names: Vec<&str> = g.iter().map(|&n| hosts[n].as_str()).collect();
            format!(
                "{} {bw:.3} GB/s ({:.0}%)",
                names.join(","),
                bw / fastest * 100.0
            )
        })
        .collect();
    format!("bisect round {n}: {}", parts.join("; "))
}

/// meta.json's `bisect` from the finished bisection.
fn summarize(b: &Bisection, points: &[usize], hosts: &[String]) -> BisectSummary {
    let (verdict, nodes, ratio) = match &b.verdict {
        Some(Verdict::SlowNode { node, ratio }) => ("slow-node", vec![*node], Some(*ratio)),
        Some(Verdict::SlowLink { a, b, ratio }) => ("slow-link", vec![*a, *b], Some(*ratio)),
        Some(Verdict::NoneStandsOut { ratio }) => ("none-stands-out", vec![], Some(*ratio)),
        None => ("unfinished", vec![], None),
    };
    let mut at = points.iter();
    let rounds = (b.rounds.iter())
        .map(|r| BisectRound {
            groups: r.groups.clone(),
            busbw_gbps: r.busbw_gbps.clone(),
            points: at.by_ref().take(r.groups.len()).copied().collect(),
        })
        .collect();
    BisectSummary {
        verdict: verdict.into(),
        hosts: nodes.iter().map(|&n| hosts[n].clone()).collect(),
        nodes,
        ratio: ratio.filter(|r| r.is_finite()),
        rounds,
    }
}

/// `bisect: slow node node3 (at 25% of the other side) after 2 rounds`.
fn verdict_note(s: &BisectSummary) -> String {
    let pct = s.ratio.map_or(String::new(), |r| {
        format!(" (at {:.0}% of the other side)", r * 100.0)
    });
    let after = format!("after {} round(s)", s.rounds.len());
    match s.verdict.as_str() {
        "slow-node" => format!("bisect: slow node {}{pct} {after}", s.hosts.join("")),
        "slow-link" => format!(
            "bisect: slow link {}{pct} {after}; its two nodes are fine elsewhere",
            s.hosts.join(" <-> ")
        ),
        _ => format!("bisect: no node stands out{pct} {after}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_messages_read_back_and_near_valid_ones_are_refused() {
        let words = group_message(7, &[2, 0], 4);
        assert_eq!(words, vec![7, 2, 2, 0, 0, 0]);
        assert_eq!(read_group(&words, 4).unwrap(), Some(vec![2, 0]));
        assert_eq!(read_group(&[OVER, 0, 0, 0, 0, 0], 4).unwrap(), None);
        for bad in [
            vec![7, 1, 2, 0, 0, 0],
            vec![7, 2, 2, 4, 0, 0],
            vec![7, 5, 0, 1, 2, 3],
            vec![7, 2, 1, 1, 0, 0],
        ] {
            assert!(read_group(&bad, 4).is_err(), "{bad:?}");
        }
    }

    proptest::proptest! {
        /// Whatever words a peer sends, the group read back is refused or is 2 or more
        /// distinct nodes of the launch; never a panic.
        #[test]
        fn any_message_is_refused_or_a_group_of_distinct_nodes(
            words in proptest::collection::vec(proptest::prelude::any::<u64>(), 0..12),
            small in proptest::collection::vec(0u64..6, 0..12),
            nodes in 1usize..8,
        ) {
            for w in [&words, &small] {
                if let Ok(Some(g)) = read_group(w, nodes) {
                    proptest::prop_assert!(g.len() >= 2 && g.iter().all(|&n| n < nodes));
                    let mut d = g.clone();
                    d.sort_unstable();
                    d.dedup();
                    proptest::prop_assert_eq!(d.len(), g.len());
                }
            }
        }
    }
}
