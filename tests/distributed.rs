//! Multi-host launches, played on one machine: every rank is its own `collbench sweep` started
//! with the variables torchrun or mpirun would give it, and `COLLBENCH_NODE_NAME` makes ranks
//! on this one host look like several nodes. The ranks meet at rank 0's store, mesh over TCP on
//! loopback, and rank 0 writes the results. Here: launches that work and launches that fail; node
//! pairs, exactness across transports and accept are in distributed_ops.rs.
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use collbench::meta::RunStatus;
use collbench::report::ranks_csv::read_ranks;
use common::launch::{finish_all, free_port, sweep_args, torchrun_rank, TOKEN};
use common::{command, meta, signal, summary, summary_rows_on_disk, wait_until, Spawned};

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
fn a_stopped_rank_is_blamed_not_the_neighbour_that_timed_out_on_it() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let extra = [
        "--op",
        "allreduce",
        "-b",
        "1K",
        "-e",
        "1M",
        "--iters",
        "100000",
    ];
    let mut extra = extra.to_vec();
    extra.extend(["--timeout", "5s"]);
    let args = sweep_args(&out, &extra);
    let port = free_port();
    let mut ranks: Vec<Spawned> = (0..3)
        .map(|r| torchrun_rank(r, 3, port, "n0", &args))
        .collect();
    let started = wait_until(Duration::from_secs(60), || summary_rows_on_disk(&out) >= 1);
    assert!(started, "no points measured");
    let victim = ranks[1].pid();
    signal(victim, libc::SIGSTOP);
    let stopped = Instant::now();
    // A few --timeouts (5 s) for the neighbours to give up, and the hang margin.
    let limit = common::hang_limit(Duration::from_secs(30));
    let rank0 = ranks.remove(0).finish(stopped, limit);
    signal(victim, libc::SIGKILL);
    let _ = finish_all(ranks, limit);
    assert_ne!(rank0.code(), 0);
    let named = "rank 1 (host n0) stopped making progress";
    assert!(rank0.stderr.contains(named), "{}", rank0.stderr);
    let m = meta(&out);
    assert_eq!(m.status, RunStatus::Failed);
    assert!(m.error.unwrap_or_default().contains(named));
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
