//! Bad command lines: each must exit with code 2 and exactly one line on stderr that names the
//! bad value, never panic, and leave no results behind.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{run, tempdir, Run};

const LIMIT: Duration = Duration::from_secs(30);

/// Runs `collbench sweep --ranks 2 --iters 2 --warmup 1 --out <out> args...`, leaving out the
/// defaults that `args` gives itself (clap refuses a repeated flag).
fn sweep(args: &[&str], out: &Path) -> Run {
    let mut full = vec!["sweep", "--no-progress"];
    for (flag, value) in [("--iters", "2"), ("--warmup", "1")] {
        if !args.contains(&flag) {
            full.extend([flag, value]);
        }
    }
    if !args.contains(&"--ranks") {
        full.extend(["--ranks", "2"]);
    }
    if !args.contains(&"--out") {
        full.extend(["--out", out.to_str().unwrap()]);
    }
    full.extend_from_slice(args);
    run(&full, LIMIT)
}

/// Checks the one-line refusal of `args`: exit code 2, a single stderr line that starts with
/// `collbench: ` and contains every piece of `names`, nothing on stdout, no results folder.
fn refused(args: &[&str], names: &[&str]) -> String {
    let (_tmp, out) = tempdir();
    let r = sweep(args, &out);
    assert!(
        !r.stderr.contains("panicked"),
        "{args:?} panicked: {}",
        r.stderr
    );
    assert_eq!(r.code(), 2, "{args:?}: {r:?}");
    let lines = r.stderr_lines();
    assert_eq!(
        lines.len(),
        1,
        "{args:?} printed {} lines: {}",
        lines.len(),
        r.stderr
    );
    let line = lines[0].to_string();
    assert!(line.starts_with("collbench: "), "{line}");
    for name in names {
        assert!(
            line.contains(name),
            "{args:?}: '{line}' does not name {name}"
        );
    }
    assert_eq!(r.stdout, "", "{args:?}");
    assert!(!out.exists(), "{args:?} created {}", out.display());
    line
}

#[test]
fn sizes_and_factors() {
    refused(&["-b", "1M", "-e", "1K"], &["inverted", "-b 1M", "-e 1K"]);
    refused(&["-b", "0"], &["-b 0", "at least 1 byte"]);
    refused(&["-b", "1.5M"], &["-b", "'1.5M'", "whole number"]);
    refused(&["-e", "8X"], &["-e", "'8X'", "unknown suffix"]);
    for f in ["0", "1", "-2", "two"] {
        refused(
            &["-f", f],
            &["-f", &format!("'{f}'"), "integer of at least 2"],
        );
    }
}

#[test]
fn names_that_do_not_exist() {
    refused(&["--op", "allgatherr"], &["op 'allgatherr'", "allgather,"]);
    refused(&["--op", "allreduce,bogus"], &["'bogus'"]);
    refused(&["--algo", "ringg"], &["algo 'ringg'", "ring"]);
    refused(&["--dtype", "f8"], &["dtype 'f8'", "bf16"]);
    refused(
        &["--redop", "xor"],
        &["'xor'", "sum, prod, max, min, avg, mulsum"],
    );
    refused(
        &["--redop", "mulsum"],
        &["the host backend has no such reduction", "avg"],
    );
    refused(&["--op", "gather", "--root", "first"], &["'first'", "all"]);
    refused(
        &[
            "--op",
            "scatter",
            "--ranks",
            "4",
            "--world-sizes",
            "2,4",
            "--root",
            "3",
        ],
        &["--root 3", "2-rank group", "--root all"],
    );
    refused(&["--in-place", "maybe"], &["--in-place 'maybe'", "both"]);
    refused(
        &["--op", "allgather", "--algo", "tree"],
        &["allgather", "tree", "runs ring"],
    );
    refused(&["--timeout", "0s"], &["--timeout", "'0s'"]);
    refused(&["--timeout", "soon"], &["--timeout", "'soon'"]);
}

#[test]
fn ranks_and_world_sizes() {
    refused(
        &["--world-sizes", "2,8", "--ranks", "4"],
        &["world size 8", "--ranks 4"],
    );
    refused(&["--world-sizes", "2,x"], &["--world-sizes", "'x'"]);
    refused(&["--ranks", "0"], &["--ranks 0"]);
    refused(&["--ranks", "-1"], &["'-1'", "--ranks"]);
    refused(&["--ranks", "100000"], &["--ranks 100000"]);
    refused(&["--iters", "0"], &["--iters must be at least 1"]);
}

#[test]
fn clap_errors_are_one_line_too() {
    refused(&["--opp", "allreduce"], &["'--opp'", "'--op'"]);
    refused(&["--iters", "-3"], &["'-3'", "--iters"]);
    refused(&["--warmup", "x"], &["'x'", "--warmup"]);
    refused(
        &["--ranks", "2", "--ranks", "3"],
        &["--ranks", "multiple times"],
    );
    let (_tmp, out) = tempdir();
    let r = sweep(&["--op"], &out);
    assert_eq!((r.code(), r.stderr_lines().len()), (2, 1), "{r:?}");
    assert!(r.stderr.contains("--op"), "{}", r.stderr);
}

#[test]
fn backends_this_build_lacks_say_which_feature() {
    // A build with the MPI backend refuses it without mpirun instead (tests/mpi.rs).
    if !cfg!(feature = "mpi") {
        refused(&["--backend", "mpi"], &["MPI", "--features mpi"]);
    }
    if !cfg!(feature = "nccl") {
        // With the feature, tests/nccl.rs checks what a machine without a GPU is told.
        refused(&["--backend", "nccl"], &["NCCL", "--features nccl"]);
    }
    refused(&["--backend", "gloo"], &["'gloo'", "host"]);
}

#[test]
fn sizes_beyond_memory_are_refused_before_allocating() {
    let _serial = common::serial();
    // 64 GiB per buffer is more than this machine has; on a machine with more memory, take a
    // size that certainly is not.
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0)
        * 1024;
    let e = if total < 64 << 30 { "64G" } else { "4T" };
    let line = refused(&["-b", "1M", "-e", e], &["-e", "memory"]);
    let shown = if e == "64G" { "64 GiB" } else { "4 TiB" };
    assert!(line.contains(shown), "{line}");
    // Refused up front: no rank was started and nothing was allocated, so no results folder.
    let (_tmp, out) = tempdir();
    let r = sweep(&["-b", "1M", "-e", e], &out);
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(!out.join("summary.csv").exists(), "a run was started");
}

#[test]
fn unwritable_results_folders() {
    // /proc refuses new folders whatever the user's rights (root included).
    let line = refused(
        &["--out", "/proc/forbidden/x"],
        &["/proc/forbidden/x", "--out"],
    );
    assert!(!line.contains("os error"), "{line}");
    let (tmp, _) = tempdir();
    let file = tmp.path().join("plain-file");
    std::fs::write(&file, "not a folder").unwrap();
    let under = file.join("x");
    refused(
        &["--out", under.to_str().unwrap()],
        &[under.to_str().unwrap(), "--out"],
    );
    refused(
        &["--out", file.to_str().unwrap()],
        &["not a folder", "--out"],
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
}
