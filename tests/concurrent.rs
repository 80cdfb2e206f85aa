//! `collbench sweep --concurrent` on the host backend: real rank processes run different
//! collectives on overlapping groups at once (each rank's calls in processes of their own, one
//! lane per call), each group's call also alone, every row exact, with the slowdown and the
//! aggregate worked out from the rows themselves; a killed lane is named by its rank and lane;
//! what cannot run is refused in one line.

mod common;

use std::time::{Duration, Instant};

use common::split::{check_pairs_beside_every_other, check_point_set, global_ranks};
use common::{
    command, hang_limit, marked, ranks_of, signal, summary, summary_rows_on_disk, sweep_ok,
    tempdir, wait_until, Spawned, MARKER_ENV, RUN_TIMEOUT,
};

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn allreduce_in_pairs_beside_allgather_across_them_exact_both_placements() {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    #[rustfmt::skip]
    let args = ["--ranks", "4", "--concurrent", "allreduce@/2,allgather@%2", "--dtype",
        "f32,bf16", "--in-place", "both", "-b", "1K", "-e", "64K", "-f", "64", "-n", "10",
        "-w", "1"];
    let r = sweep_ok(&args, &out, LIMIT);
    // 2 dtypes x 2 placements x 2 sizes, each 4 groups alone and 4 at once.
    check_pairs_beside_every_other("host", &summary(&out));
    let tag = "group 1 3 with allreduce@/2 + allgather@%2 of 4: x";
    assert!(r.stdout.contains(tag), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("each rank makes its 2 calls at once in 2 processes, 8 in all"),
        "{}",
        r.stdout
    );
    // ranks.csv names each group's global ranks (not its lane's processes).
    assert_eq!(global_ranks(&out, 3), ["1", "3"]);
    assert_eq!(global_ranks(&out, 5), ["2", "3"]);
    assert_eq!(global_ranks(&out, 7), ["1", "3"]);
}

#[test]
fn entries_of_one_rule_over_tcp_run_at_once_each_in_its_own_lane() {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    // An AllReduce and an AllGather on the same pairs: on one stream between two ranks their
    // messages would cross.
    #[rustfmt::skip]
    let args = ["--ranks", "4", "--transport", "tcp", "--concurrent",
        "allreduce@/2,allgather@/2,reducescatter@%2", "-b", "64K", "-e", "64K", "-n", "30"];
    sweep_ok(&args, &out, LIMIT);
    let expected = [
        ("allreduce", "0-1"),
        ("allreduce", "2-3"),
        ("allgather", "0-1"),
        ("allgather", "2-3"),
        ("reducescatter", "0 2"),
        ("reducescatter", "1 3"),
    ];
    let label = "allreduce@/2 + allgather@/2 + reducescatter@%2 of 4";
    check_point_set("host", &summary(&out), &expected, label);
}

#[test]
fn rooted_calls_at_once_take_one_root_inside_every_group_in_every_cycle() {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    #[rustfmt::skip]
    let args = ["--ranks", "4", "--concurrent", "broadcast@%2,reduce@/2", "--root", "1", "-b",
        "4K", "-e", "4K", "-n", "5", "--cycles", "2"];
    sweep_ok(&args, &out, LIMIT);
    let expected = [
        ("broadcast", "0 2"),
        ("broadcast", "1 3"),
        ("reduce", "0-1"),
        ("reduce", "2-3"),
    ];
    let points = summary(&out);
    assert_eq!(points.len(), 16, "{points:?}");
    for (cycle, rows) in points.chunks(8).enumerate() {
        check_point_set("host", rows, &expected, "broadcast@%2 + reduce@/2 of 4");
        assert!(rows.iter().all(|p| p.cycle == cycle as u64), "{rows:?}");
    }
    assert!(points.iter().all(|p| p.key.root == Some(1)), "{points:?}");
}

#[test]
fn a_killed_lane_ends_the_run_naming_its_rank_and_lane() {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let marker = common::marker();
    #[rustfmt::skip]
    let args = ["sweep", "--no-progress", "--out", out.to_str().unwrap(), "--ranks", "2",
        "--concurrent", "allreduce@/2,allgather@/2", "-b", "8", "-e", "64M", "--iters", "200"];
    let mut cmd = command(&args);
    cmd.env(MARKER_ENV, &marker);
    let mut run = Spawned::start(cmd);
    let launcher = run.pid();
    // Process 3 is rank 1's second lane: it runs only the AllGather at once with the other.
    let up = wait_until(hang_limit(RUN_TIMEOUT), || {
        summary_rows_on_disk(&out) >= 4 && ranks_of(launcher).len() == 4
    });
    assert!(up && run.running(), "the sweep did not get going");
    let procs = ranks_of(launcher);
    let victim = procs.iter().find(|p| p.rank() == Some(3)).unwrap().pid;
    signal(victim, libc::SIGKILL);
    let r = run.finish(Instant::now(), hang_limit(RUN_TIMEOUT));
    assert_eq!(r.code(), 2, "{r:?}");
    let want = format!("collbench: rank 1 (lane 1, process 3) (pid {victim}) ended with signal 9");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.starts_with(&want), "{}", r.stderr);
    let left = marked(&marker);
    assert!(left.is_empty(), "processes left behind: {left:?}");
    common::accept::assert_run_cause(&out, "rank-missing", "rank 1");
}

#[test]
fn what_cannot_run_at_once_is_refused_in_one_line() {
    let (_tmp, out) = tempdir();
    let base = ["-b", "1K"];
    for (spec, says) in [
        ("allreduce@/2", "has 1 entries"),
        ("allreduce@/2,allgather", "has no '@'"),
        (
            "alltoallv@/2,allgather@/2",
            "alltoallv is not measured beside",
        ),
    ] {
        let mut args = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
        args.extend_from_slice(&base);
        args.extend_from_slice(&["--ranks", "2", "-e", "1K", "--concurrent", spec]);
        let r = common::run(&args, LIMIT);
        assert_eq!((r.code(), r.stderr_lines().len()), (2, 1), "{spec}: {r:?}");
        assert!(r.stderr.contains(says), "{spec}: {}", r.stderr);
    }
    #[rustfmt::skip]
    let refused = [
        (&["--ranks", "2", "-e", "1K", "--concurrent", "allreduce@%2,allgather@/2", "--split",
            "%2"][..],
            "measured one at a time"),
        (&["--ranks", "2", "-e", "1K", "--concurrent", "broadcast@%2,reduce@/2", "--root",
            "all"][..],
            "--root all and --concurrent"),
        (&["--concurrent", "allreduce@/40,allgather@/80", "--ranks", "160", "-e", "1M"][..],
            "160 ranks need 320 processes, more than 256"),
    ];
    for (extra, says) in refused {
        let mut args = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
        args.extend_from_slice(&base);
        args.extend_from_slice(extra);
        let r = common::run(&args, LIMIT);
        assert_eq!(
            (r.code(), r.stderr_lines().len()),
            (2, 1),
            "{extra:?}: {r:?}"
        );
        assert!(r.stderr.contains(says), "{extra:?}: {}", r.stderr);
    }
    assert!(!out.join("summary.csv").exists());
}
