use std::path::{Path, PathBuf};

use super::*;
use crate::accept::criteria::Criteria;
use crate::accept::judge::{judge, Header};
use crate::accept::measure::{group, Slowest};
use crate::accept::reason::Reason;
use crate::collective::Op;
use crate::meta::RunStatus;
use crate::model::record::{IterSample, PointRecord};
use crate::report::straggler::{analyze, PointIters};

#[test]
fn a_node_is_judged_against_its_share_of_the_ranks() {
    // 4 ranks, 2 per node: node 1 slowest in 9 of 10 iterations, 5 by chance: (0.9 − 0.5) / 0.5.
    let s = SlowestRank::of_groups(&[2, 3, 2, 2, 3, 0, 2, 3, 2, 3], &[0, 0, 1, 1]).unwrap();
    assert_eq!((s.rank, s.share, s.chance), (1, 0.9, 0.5));
    assert!((s.bias - 0.8).abs() < 1e-12, "{s:?}");
    // Uneven nodes: node 1 holds 1 of 3 ranks; slowest as often as node 0, it is further
    // from its chance (1/3) than node 0 from its (2/3).
    let s = SlowestRank::of_groups(&[2, 2, 0, 1], &[0, 0, 1]).unwrap();
    assert_eq!(s.rank, 1);
    assert!((s.bias - 0.25).abs() < 1e-12, "{s:?}");
    // One node, no iterations, or ranks outside the placement: nothing to name.
    assert_eq!(SlowestRank::of_groups(&[0, 1], &[0, 0]), None);
    assert_eq!(SlowestRank::of_groups(&[], &[0, 1]), None);
    assert_eq!(SlowestRank::of_groups(&[7, 9], &[0, 1]), None);
}

/// A 1 MiB AllReduce at 4 ranks on `nodes` nodes, node (or rank) 1 slowest as given.
fn two_node_run(nodes: usize, slowest: Slowest) -> RunData {
    let mut rec = PointRecord::example(Op::AllReduce, 1 << 20, 4).with_time_us(100.0);
    rec.key.nodes = nodes;
    RunData {
        dir: PathBuf::from("r0"),
        status: RunStatus::Complete,
        error: None,
        failure: None,
        has_ranks: false,
        hosts: vec!["a".into(), "b".into()],
        rank_nodes: vec![0, 0, 1, 1],
        points: vec![(rec, Vec::new())],
        slowest: vec![slowest],
        stragglers: Default::default(),
    }
}

fn verdict_of(text: &str, runs: Vec<RunData>) -> crate::accept::verdict::Verdict {
    let c = Criteria::parse(text, Path::new("/x/c.toml")).unwrap();
    let header = Header {
        created: "2026-01-01T00:00:00Z".into(),
        command_line: vec![],
    };
    judge(&c, &group(runs), header)
}

#[test]
fn a_node_slowest_too_often_fails_as_node_slow_and_is_named() {
    let slowest = Slowest {
        rank: SlowestRank::of(&[2, 3, 2, 2, 3, 0, 2, 3, 2, 3], 4),
        node: SlowestRank::of_groups(&[2, 3, 2, 2, 3, 0, 2, 3, 2, 3], &[0, 0, 1, 1]),
    };
    let text = "[[criterion]]\nname = \"n\"\nmax_node_slowest_bias = 0.5\nmax_slowest_bias = 0.5\n";
    let v = verdict_of(text, vec![two_node_run(2, slowest)]);
    let checks = &v.criteria[0].points[0].checks;
    let node = checks
        .iter()
        .find(|c| c.check == "max_node_slowest_bias")
        .unwrap();
    assert_eq!(node.reason, Some(Reason::NodeSlow));
    assert!((node.measured.unwrap() - 0.8).abs() < 1e-12, "{node:?}");
    assert_eq!(node.culprit.as_ref().unwrap().describe(), "node 1 (b)");
    assert_eq!(
        node.note.as_deref(),
        Some("node 1 (b) slowest in 90% (50% by chance) of iterations")
    );
    // Rank 2 slowest in 5 of 10 (2.5 by chance): bias 1/3, under 0.5.
    let rank = checks
        .iter()
        .find(|c| c.check == "max_slowest_bias")
        .unwrap();
    assert_eq!((rank.reason, rank.culprit.as_ref()), (None, None));
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["reasons"][0]["code"], "node-slow");
    assert_eq!(json["reasons"][0]["names"][0], "node 1 (b)");
}

#[test]
fn on_one_node_the_node_bias_is_the_slowest_ranks() {
    let slowest = Slowest {
        rank: SlowestRank::of(&[1, 1, 1, 1], 4),
        node: None,
    };
    let v = verdict_of(
        "[[criterion]]\nmax_node_slowest_bias = 0.9\n",
        vec![two_node_run(1, slowest)],
    );
    let c = &v.criteria[0].points[0].checks[0];
    assert_eq!((c.measured, c.reason), (Some(1.0), Some(Reason::NodeSlow)));
    assert_eq!(c.culprit.as_ref().unwrap().describe(), "rank 1");
    let note = c.note.as_deref().unwrap();
    assert!(note.starts_with("one node: judged as the slowest rank's bias; rank 1 slowest in 100%"));
    // Without samples it is not judged, and says why.
    let none = verdict_of(
        "[[criterion]]\nmax_node_slowest_bias = 0.9\n",
        vec![two_node_run(2, Slowest::default())],
    );
    let c = &none.criteria[0].points[0].checks[0];
    assert_eq!(c.reason, Some(Reason::NoData));
    assert!(
        c.note.as_deref().unwrap().contains("node placement"),
        "{c:?}"
    );
}

/// Iterations of one point at 4 ranks where `slow` is the slowest of each, 10% behind.
fn iters(slow: &[usize]) -> Vec<IterSample> {
    (slow.iter())
        .map(|&r| IterSample {
            time_us: 110.0,
            slowest_rank: r,
            fastest_us: 100.0,
        })
        .collect()
}

#[test]
fn the_section_names_hosts_and_notes_persistent_stragglers() {
    let samples = iters(&[3, 3, 3, 3, 3, 3, 3, 0]);
    let points = [PointIters {
        world: 4,
        iters: &samples,
        launch_ranks: &[],
        nodes: &[],
    }];
    let mut run = two_node_run(2, Slowest::default());
    run.stragglers = analyze(&points, &run.rank_nodes);
    let section = section(&[run.clone(), two_node_run(2, Slowest::default())]);
    assert_eq!(section.len(), 1, "a run without samples has no entry");
    let s = &section[0];
    assert_eq!((s.run.as_str(), s.points, s.iterations), ("r0", 1, 8));
    let r3 = &s.ranks[0];
    assert_eq!(
        (r3.id, r3.host.as_deref(), r3.slowest, r3.of),
        (3, Some("b"), 7, 8)
    );
    assert_eq!((r3.share, r3.chance, r3.persistent), (0.875, 0.25, true));
    assert!((r3.excess_median.unwrap() - 0.1).abs() < 1e-12);
    let n1 = &s.nodes[0];
    assert_eq!((n1.id, n1.host.as_deref(), n1.chance), (1, Some("b"), 0.5));
    assert_eq!(
        notes(&section),
        [
            "r0: node 1 (b) persistently slowest: 88% of 8 iterations (50% by chance), +10.0% \
             over the fastest (median)",
            "r0: rank 3 (b) persistently slowest: 88% of 8 iterations (25% by chance), +10.0% \
             over the fastest (median)",
        ]
    );
    // Into verdict.json, with the notes.
    let v = verdict_of("[[criterion]]\nmax_cv = 1.0\n", vec![run]);
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["stragglers"][0]["nodes"][0]["host"], "b");
    assert_eq!(json["stragglers"][0]["first_iteration"]["max_ratio"], 1.0);
    assert_eq!(v.notes.len(), 2);
    assert_eq!(v.result, crate::accept::verdict::Outcome::Pass);
}
