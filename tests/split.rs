//! `collbench sweep --split` end to end on the host backend: real rank processes in groups of
//! nccl-tests' NCCL_TESTS_SPLIT rule, each group's call measured alone and then with the other
//! groups' at the same time, exact, with the slowdown and the aggregate worked out from the
//! rows themselves; nccl-tests' variables read; bad rules refused in one line.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use collbench::model::record::PointRecord;
use common::imports::path;
use common::split::{check_size, global_ranks};
use common::{command, summary, sweep_ok, Spawned};

const LIMIT: Duration = Duration::from_secs(120);

fn sweep(args: &[&str], out: &Path) -> (Vec<PointRecord>, String) {
    let r = sweep_ok(args, out, LIMIT);
    (summary(out), r.stdout)
}

#[test]
fn mod_2_runs_every_other_rank_together_and_alone_exact() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    #[rustfmt::skip]
    let args = ["--op", "allreduce", "--ranks", "4", "--split", "MOD 2", "-b", "1K", "-e", "64K",
        "-f", "8", "-n", "20", "-w", "2"];
    let (points, stdout) = sweep(&args, &out);
    // 1K, 8K, 64K: two groups alone, then both at once.
    assert_eq!(points.len(), 3 * 4, "{points:?}");
    for rows in points.chunks(4) {
        assert!(rows
            .iter()
            .all(|r| r.key.bytes == rows[0].key.bytes && r.key.world == 2));
        check_size(rows, &["0 2", "1 3"], "split %2 of 4");
    }
    assert!(
        stdout.contains("group 1 3 with split %2 of 4: x"),
        "{stdout}"
    );
    // ranks.csv names each group's global ranks.
    assert_eq!(global_ranks(&out, 1), ["1", "3"]);
    assert_eq!(global_ranks(&out, 2), ["0", "2"]);
}

#[test]
fn div_2_over_tcp_with_nccl_tests_variable_and_alltoall_exact() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    #[rustfmt::skip]
    let args = ["sweep", "--no-progress", "--op", "alltoall", "--ranks", "4", "--transport",
        "tcp", "-b", "4K", "-e", "4K", "-n", "10", "--out", path(&out)];
    let mut cmd = command(&args);
    cmd.env("NCCL_TESTS_SPLIT", "DIV 2");
    let r = Spawned::start(cmd).finish(Instant::now(), LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    check_size(&summary(&out), &["0-1", "2-3"], "split /2 of 4");
    // The mask wins over the rule, as nccl-tests reads them: &1 is MOD 2's groups.
    let out = tmp.path().join("m");
    let mut cmd = command(&[&args[..args.len() - 1], &[path(&out)]].concat());
    cmd.env("NCCL_TESTS_SPLIT", "DIV 2")
        .env("NCCL_TESTS_SPLIT_MASK", "1");
    let r = Spawned::start(cmd).finish(Instant::now(), LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    check_size(&summary(&out), &["0 2", "1 3"], "split &1 of 4");
}

#[test]
fn bad_rules_and_unequal_groups_are_one_line_each() {
    let tmp = tempfile::tempdir().unwrap();
    let base = [
        "sweep",
        "--no-progress",
        "--op",
        "allreduce",
        "--ranks",
        "3",
        "-b",
        "1K",
    ];
    for (rule, says) in [
        ("XOR 2", "has no operation"),
        ("MOD 0", "divides by zero"),
        ("MOD 2x", "is not a whole number"),
    ] {
        let r = common::run(&[&base[..], &["--split", rule]].concat(), LIMIT);
        assert_eq!(r.code(), 2, "{rule}: {r:?}");
        assert!(r.stderr.contains(says), "{rule}: {}", r.stderr);
    }
    let out = tmp.path().join("r");
    let args = [
        &base[..],
        &["-e", "1K", "--split", "%2", "--out", path(&out)],
    ]
    .concat();
    let r = common::run(&args, LIMIT);
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(
        r.stderr.contains("groups of 2, 1 ranks of world 3"),
        "{}",
        r.stderr
    );
}
