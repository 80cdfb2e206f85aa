//! Multi-host launches played on one machine (see distributed.rs): every node pair measured and
//! its links reported, every op and algorithm exact across shared memory and TCP, and accept
//! judged by rank 0 across a launch.
#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::launch::{
    assert_all_succeeded, finish_all, free_port, one_rank_per_node, sweep_args, torchrun_rank,
    torchrun_rank_with,
};
use common::{meta, summary};

#[test]
fn pairs_measure_every_node_pair_and_report_the_links() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let args = sweep_args(
        &out,
        &[
            "--pairs",
            "--op",
            "allreduce",
            "-b",
            "1K",
            "-e",
            "32K",
            "-f",
            "32",
            "--iters",
            "5",
        ],
    );
    let runs = one_rank_per_node(&["a", "b", "c"], &args, Duration::from_secs(60));
    assert_all_succeeded(&runs);
    let pairs = collbench::report::pairs_csv::read_pairs(&out.join("pairs.csv")).unwrap();
    let seen: Vec<(String, String)> = pairs
        .iter()
        .map(|p| (p.host_a.clone(), p.host_b.clone()))
        .collect();
    let want = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        seen,
        vec![
            want("a", "b"),
            want("a", "b"),
            want("a", "c"),
            want("a", "c"),
            want("b", "c"),
            want("b", "c")
        ]
    );
    assert_eq!(
        pairs.iter().map(|p| p.point).collect::<Vec<_>>(),
        (0..6).collect::<Vec<_>>()
    );
    let rows = summary(&out);
    assert!(rows
        .iter()
        .all(|p| (p.key.world, p.key.nodes, p.wrong) == (2, 2, 0)));
    assert_eq!(meta(&out).files["pairs.csv"], "collbench.pairs/v1");
    // Every note is about the pairs: a link's busbw, or a node whose pairs are all slow (loopback
    // "links" differ by scheduling noise, so which notes appear is not fixed).
    let about_pairs = |l: &&str| l.contains("link") || l.contains("slow node");
    let report = runs[0].stdout.lines().filter(about_pairs);
    assert_eq!(
        report.count(),
        runs[0].stdout.matches("# note: ").count(),
        "{}",
        runs[0].stdout
    );
    assert!(runs[0].stdout.contains("# note: "), "{}", runs[0].stdout);
    // Every table row names its pair.
    for pair in ["pair a-b", "pair a-c", "pair b-c"] {
        assert_eq!(
            runs[0].stdout.matches(pair).count(),
            2,
            "{}",
            runs[0].stdout
        );
    }
}

#[test]
fn pairs_need_two_nodes() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let run = common::run(
        &sweep_args(&out, &["--pairs", "--ranks", "2"]),
        common::hang_limit(common::RUN_TIMEOUT),
    );
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--pairs measures between nodes"),
        "{}",
        run.stderr
    );
    let port = free_port();
    let args = sweep_args(&out, &["--pairs"]);
    let ranks = (0..2)
        .map(|r| torchrun_rank(r, 2, port, "same", &args))
        .collect();
    for run in finish_all(ranks, Duration::from_secs(30)) {
        assert_eq!(run.code(), 2, "{}", run.stderr);
        assert!(run.stderr.contains("at least two nodes"), "{}", run.stderr);
    }
}

#[test]
fn every_op_and_algorithm_is_exact_across_shared_memory_and_tcp() {
    exact_across_shared_memory_and_tcp("auto");
}

#[test]
fn every_op_is_exact_across_tcp_and_single_copy_shared_memory() {
    // Every shared-memory message single-copy, whether the other half of a step is TCP or not.
    exact_across_shared_memory_and_tcp("single");
}

/// Every op, algorithm and placement on 2 nodes x 2 ranks, shared memory moving messages as
/// `COLLBENCH_SHM_COPY=copy_mode` says; every point must be exact.
fn exact_across_shared_memory_and_tcp(copy_mode: &str) {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    // 2 nodes x 2 ranks: ring and tree steps cross between shared memory and TCP, and 4 MiB
    // outgrows both the segment's slot rings and the socket buffers.
    let args = sweep_args(
        &out,
        &[
            "--op",
            "allreduce,allgather,reducescatter,broadcast,reduce",
            "--algo",
            "ring,tree,recursive-doubling",
            "--dtype",
            "f32,bf16,i32",
            "--in-place",
            "both",
            "--world-sizes",
            "2x2",
            "-b",
            "8",
            "-e",
            "4M",
            "-f",
            "64",
            "--iters",
            "2",
            "--warmup",
            "1",
        ],
    );
    let port = free_port();
    let ranks = (0..4)
        .map(|r| {
            let node = ["n0", "n1"][r / 2];
            torchrun_rank_with(
                r,
                4,
                port,
                node,
                &args,
                &[("COLLBENCH_SHM_COPY", copy_mode)],
            )
        })
        .collect();
    let runs = finish_all(ranks, Duration::from_secs(240));
    for (r, run) in runs.iter().enumerate() {
        assert_eq!(run.code(), 0, "rank {r}: {}", run.stderr);
    }
    assert_eq!(meta(&out).transport, "shm+tcp");
    let rows = summary(&out);
    assert!(rows.len() > 50, "{} points", rows.len());
    for p in &rows {
        assert_eq!(p.wrong, 0, "{:?}", p.key);
        assert_eq!((p.key.world, p.key.nodes), (4, 2));
    }
}

#[test]
fn accept_runs_across_a_launch_and_rank_0_judges() {
    let _guard = common::serial();
    let (tmp, _) = common::tempdir();
    let dir = tmp.path();
    let criteria = dir.join("c.toml");
    let text = "name = \"tiny\"\n[sweep]\nop = \"allreduce\"\nmin_bytes = \"1K\"\nmax_bytes = \"64K\"\nfactor = 8\niters = 5\n\n[[criterion]]\nname = \"correct\"\nmax_wrong = 0\n";
    std::fs::write(&criteria, text).unwrap();
    let out = dir.join("acc");
    let args = [
        "accept",
        "--criteria",
        criteria.to_str().unwrap(),
        "--repeat",
        "2",
        "--out",
        out.to_str().unwrap(),
    ];
    let runs = one_rank_per_node(&["a", "b"], &args, Duration::from_secs(120));
    assert_all_succeeded(&runs);
    assert!(
        runs[0].stdout.contains("verdict: PASS"),
        "{}",
        runs[0].stdout
    );
    assert!(runs[1].stdout.is_empty(), "{}", runs[1].stdout);
    assert!(out.join("verdict.json").is_file() && out.join("repeat-2/summary.csv").is_file());
}
