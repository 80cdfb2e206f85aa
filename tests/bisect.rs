//! `sweep --bisect` across "nodes" on one machine, launched as torchrun would start the ranks:
//! every round's groups measured (one rank on each node), written as points, and the rounds and
//! verdict in meta.json; refusals in one line. The verdict on a shaped slow node is held in
//! tests/netns.rs, where links have known rates.
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use collbench::meta::RunStatus;
use collbench::report::ranks_csv::read_ranks;
use common::launch::{one_rank_per_node, sweep_args};
use common::{meta, summary};

const LIMIT: Duration = Duration::from_secs(120);

fn launch(out: &std::path::Path, nodes: &[&str], extra: &[&str]) -> Vec<common::Run> {
    one_rank_per_node(nodes, &sweep_args(out, extra), LIMIT)
}

#[test]
fn five_nodes_are_bisected_in_rounds_of_whole_points() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let extra = [
        "--bisect",
        "--op",
        "allgather",
        "-b",
        "64K",
        "-e",
        "256K",
        "--iters",
        "4",
        "--warmup",
        "1",
    ];
    let runs = launch(&out, &["n0", "n1", "n2", "n3", "n4"], &extra);
    for (r, run) in runs.iter().enumerate() {
        assert_eq!(run.code(), 0, "rank {r}: {}", run.stderr);
    }
    assert!(
        runs[0].stdout.contains("# note: bisect round 1: n0,n1,n2 "),
        "{}",
        runs[0].stdout
    );
    assert!(
        runs[0].stdout.contains("# note: bisect: "),
        "{}",
        runs[0].stdout
    );
    let m = meta(&out);
    assert_eq!(m.status, RunStatus::Complete);
    assert!(!out.join("pairs.csv").exists());
    let b = m.bisect.expect("meta.json bisect");
    assert!(["slow-node", "slow-link", "none-stands-out"].contains(&b.verdict.as_str()));
    assert_eq!(b.rounds[0].groups, vec![vec![0, 1, 2], vec![3, 4]]);
    // Each group is one point at the largest size, on one rank of each of its nodes.
    let points = summary(&out);
    let ranks = read_ranks(&out.join("ranks.csv")).unwrap();
    let mut seen = 0;
    for round in &b.rounds {
        for (g, &p) in round.groups.iter().zip(&round.points) {
            let rec = &points[p];
            let bytes = common::expected_bytes("allgather", "f32", 256 << 10, g.len());
            assert_eq!(
                (rec.key.bytes, rec.key.world, rec.key.nodes),
                (bytes, g.len(), g.len())
            );
            let nodes: Vec<usize> = ranks
                .iter()
                .filter(|(q, _)| *q == p)
                .map(|(_, s)| s.node)
                .collect();
            assert_eq!(&nodes, g, "point {p}");
            seen += 1;
        }
    }
    assert_eq!(seen, points.len());
    match b.verdict.as_str() {
        "slow-node" => assert_eq!(b.nodes.len(), 1),
        "none-stands-out" => assert!(b.nodes.is_empty()),
        _ => {}
    }
}

#[test]
fn bisection_needs_three_nodes_a_launch_and_no_soak() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let runs = launch(
        &out,
        &["n0", "n1"],
        &["--bisect", "--op", "allgather", "-b", "1K", "-e", "1K"],
    );
    assert_eq!(runs[0].code(), 2, "{}", runs[0].stderr);
    assert!(
        runs[0]
            .stderr
            .contains("--bisect needs ranks on 3 or more nodes"),
        "{}",
        runs[0].stderr
    );
    let (_tmp, out) = common::tempdir();
    let r = common::run(
        &["sweep", "--bisect", "--out", out.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--bisect measures between nodes"),
        "{}",
        r.stderr
    );
    let r = common::run(&["sweep", "--bisect", "--pairs"], LIMIT);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let (_tmp, out) = common::tempdir();
    let extra = ["--bisect", "--cycles", "2", "-b", "1K", "-e", "1K"];
    let runs = launch(&out, &["n0", "n1", "n2"], &extra);
    assert_eq!(runs[0].code(), 2, "{}", runs[0].stderr);
    assert!(
        runs[0].stderr.contains("drop --cycles"),
        "{}",
        runs[0].stderr
    );
}
