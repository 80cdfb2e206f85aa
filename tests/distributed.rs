//! Multi-host launches, played on one machine: every rank is its own `collbench sweep` started
//! with the variables torchrun or mpirun would give it, and `COLLBENCH_NODE_NAME` makes ranks
//! on this one host look like several nodes. The ranks meet at rank 0's store, mesh over TCP on
//! loopback, and rank 0 writes the results.
#![cfg(target_os = "linux")]

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use collbench::meta::RunStatus;
use collbench::report::ranks_csv::read_ranks;
use common::{command, meta, signal, summary, summary_rows_on_disk, wait_until, Run, Spawned};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// A port nobody listens on right now, for rank 0's store.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// One rank of a torchrun-style launch of `world` ranks, on node `node`.
fn torchrun_rank(rank: usize, world: usize, port: u16, node: &str, args: &[&str]) -> Spawned {
    torchrun_rank_with(rank, world, port, node, args, &[])
}

/// [`torchrun_rank`] with extra environment variables.
fn torchrun_rank_with(
    rank: usize,
    world: usize,
    port: u16,
    node: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Spawned {
    let mut cmd = command(args);
    cmd.envs(env.iter().copied());
    cmd.env("RANK", rank.to_string())
        .env("WORLD_SIZE", world.to_string())
        .env("LOCAL_RANK", "0")
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .env("COLLBENCH_TOKEN", TOKEN)
        .env("COLLBENCH_NODE_NAME", node);
    Spawned::start(cmd)
}

/// Waits for every rank, rank 0 first in the result.
fn finish_all(ranks: Vec<Spawned>, limit: Duration) -> Vec<Run> {
    let since = Instant::now();
    ranks.into_iter().map(|r| r.finish(since, limit)).collect()
}

fn sweep_args<'a>(out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
    a.extend_from_slice(extra);
    a
}

#[test]
fn four_ranks_on_two_nodes_measure_within_across_and_all() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let args = sweep_args(
        &out,
        &[
            "--op",
            "allreduce,allgather",
            "-b",
            "1K",
            "-e",
            "64K",
            "-f",
            "8",
            "--iters",
            "5",
            "--warmup",
            "1",
        ],
    );
    let port = free_port();
    // Ranks alternate between the nodes, as `srun --distribution=cyclic` places them.
    let ranks = (0..4)
        .map(|r| torchrun_rank(r, 4, port, ["n0", "n1"][r % 2], &args))
        .collect();
    let runs = finish_all(ranks, Duration::from_secs(120));
    for (r, run) in runs.iter().enumerate() {
        assert_eq!(run.code(), 0, "rank {r}: {}", run.stderr);
    }
    assert!(runs[1].stdout.is_empty(), "only rank 0 prints the table");
    assert!(
        runs[0].stdout.contains("# note: per node (") && runs[0].stdout.contains("n1 "),
        "{}",
        runs[0].stdout
    );
    let m = meta(&out);
    assert_eq!(m.status, RunStatus::Complete);
    assert_eq!((m.ranks, m.nodes, m.transport.as_str()), (4, 2, "shm+tcp"));
    assert_eq!(m.hosts, vec!["n0", "n1"]);
    assert_eq!(m.rank_nodes, vec![0, 1, 0, 1]);
    let rows = summary(&out);
    let shapes: Vec<(usize, usize)> = rows.iter().map(|p| (p.key.world, p.key.nodes)).collect();
    for want in [(2, 1), (2, 2), (4, 2)] {
        let n = shapes.iter().filter(|&&s| s == want).count();
        assert_eq!(n, 6, "points of (world, nodes) {want:?} in {shapes:?}");
    }
    assert!(rows.iter().all(|p| p.wrong == 0 && p.time_us_median > 0.0));
    // The one-node group is ranks 0 and 2; one rank per node is ranks 0 and 1.
    let ranks = read_ranks(&out.join("ranks.csv")).unwrap();
    let members = |point: usize| -> Vec<(usize, usize)> {
        let of_point = ranks.iter().filter(|(p, _)| *p == point);
        of_point.map(|(_, s)| (s.global_rank, s.node)).collect()
    };
    let first = |world, nodes| {
        rows.iter()
            .position(|p| (p.key.world, p.key.nodes) == (world, nodes))
    };
    assert_eq!(members(first(2, 1).unwrap()), vec![(0, 0), (2, 0)]);
    assert_eq!(members(first(2, 2).unwrap()), vec![(0, 0), (1, 1)]);
    assert_eq!(
        members(first(4, 2).unwrap()),
        vec![(0, 0), (2, 0), (1, 1), (3, 1)]
    );
}

#[test]
fn open_mpi_variables_start_a_launch_too() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let args = sweep_args(
        &out,
        &[
            "--op",
            "reducescatter",
            "-b",
            "64",
            "-e",
            "4K",
            "--iters",
            "3",
        ],
    );
    let store = format!("127.0.0.1:{}", free_port());
    let ranks = (0..2)
        .map(|r| {
            let mut cmd = command(&args);
            cmd.env("OMPI_COMM_WORLD_RANK", r.to_string())
                .env("OMPI_COMM_WORLD_SIZE", "2")
                .env("OMPI_COMM_WORLD_LOCAL_RANK", r.to_string())
                .env("OMPI_COMM_WORLD_LOCAL_SIZE", "2")
                .env("COLLBENCH_STORE_ADDR", &store)
                .env("COLLBENCH_TOKEN", TOKEN);
            Spawned::start(cmd)
        })
        .collect();
    let runs = finish_all(ranks, Duration::from_secs(60));
    assert_eq!(runs[0].code(), 0, "{}", runs[0].stderr);
    assert_eq!(runs[1].code(), 0, "{}", runs[1].stderr);
    let rows = summary(&out);
    assert!(!rows.is_empty() && rows.iter().all(|p| p.key.world == 2 && p.key.nodes == 1));
}

#[test]
fn a_rank_that_dies_is_named_and_what_was_measured_is_kept() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let args = sweep_args(
        &out,
        &[
            "--op",
            "allreduce",
            "-b",
            "8",
            "-e",
            "64M",
            "--iters",
            "200",
            "--timeout",
            "5s",
        ],
    );
    let port = free_port();
    let mut ranks: Vec<Spawned> = (0..3)
        .map(|r| torchrun_rank(r, 3, port, "n0", &args))
        .collect();
    let started = wait_until(Duration::from_secs(60), || summary_rows_on_disk(&out) >= 2);
    assert!(started, "no points measured");
    signal(ranks[2].pid(), libc::SIGKILL);
    let killed = Instant::now();
    // Within the run's --timeout (5 s) and the hang margin: load may slow the detection.
    let limit = common::hang_limit(Duration::from_secs(5));
    let rank0 = ranks.remove(0).finish(killed, limit);
    let others = finish_all(ranks, limit);
    assert_ne!(rank0.code(), 0);
    assert!(rank0.stderr.contains("rank 2"), "{}", rank0.stderr);
    assert!(
        others[0].code() != 0,
        "rank 1 must fail too: {}",
        others[0].stderr
    );
    let m = meta(&out);
    assert_eq!(m.status, RunStatus::Failed);
    assert!(m.error.unwrap_or_default().contains("rank 2"));
    assert!(summary_rows_on_disk(&out) >= 2);
}

#[test]
fn bad_launches_are_refused_with_the_fix() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    // No token: the rank says which variable to set.
    let mut cmd = command(&sweep_args(&out, &["--iters", "1"]));
    cmd.env("RANK", "1")
        .env("WORLD_SIZE", "2")
        .env("MASTER_ADDR", "127.0.0.1");
    let run = Spawned::start(cmd).finish(Instant::now(), common::hang_limit(common::RUN_TIMEOUT));
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(run.stderr.contains("COLLBENCH_TOKEN"), "{}", run.stderr);
    // --ranks disagrees with the launcher.
    let args = sweep_args(&out, &["--ranks", "3"]);
    let run = torchrun_rank(1, 2, free_port(), "n0", &args)
        .finish(Instant::now(), common::hang_limit(common::RUN_TIMEOUT));
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(run.stderr.contains("drop --ranks"), "{}", run.stderr);
    // Ranks started with different sweeps.
    let port = free_port();
    let a = sweep_args(&out, &["-e", "1K"]);
    let b = sweep_args(&out, &["-e", "2K"]);
    let ranks = vec![
        torchrun_rank(0, 2, port, "n0", &a),
        torchrun_rank(1, 2, port, "n0", &b),
    ];
    for run in finish_all(ranks, Duration::from_secs(30)) {
        assert_eq!(run.code(), 2, "{}", run.stderr);
        assert!(run.stderr.contains("other sweep options"), "{}", run.stderr);
    }
}

#[test]
fn a_node_shape_needs_a_multi_host_launch() {
    let (_tmp, out) = common::tempdir();
    let run = common::run(
        &sweep_args(&out, &["--ranks", "2", "--world-sizes", "2x1"]),
        common::hang_limit(common::RUN_TIMEOUT),
    );
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--world-sizes 2x1 spans 2 nodes"),
        "{}",
        run.stderr
    );
}

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
    let port = free_port();
    let ranks = (0..3)
        .map(|r| torchrun_rank(r, 3, port, ["a", "b", "c"][r], &args))
        .collect();
    let runs = finish_all(ranks, Duration::from_secs(60));
    for (r, run) in runs.iter().enumerate() {
        assert_eq!(run.code(), 0, "rank {r}: {}", run.stderr);
    }
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
    let port = free_port();
    let ranks = (0..2)
        .map(|r| torchrun_rank(r, 2, port, ["a", "b"][r], &args))
        .collect();
    let runs = finish_all(ranks, Duration::from_secs(120));
    for (r, run) in runs.iter().enumerate() {
        assert_eq!(run.code(), 0, "rank {r}: {}", run.stderr);
    }
    assert!(
        runs[0].stdout.contains("verdict: PASS"),
        "{}",
        runs[0].stdout
    );
    assert!(runs[1].stdout.is_empty(), "{}", runs[1].stdout);
    assert!(out.join("verdict.json").is_file() && out.join("repeat-2/summary.csv").is_file());
}
