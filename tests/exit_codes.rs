//! The README's exit-code table, row by row, against the real binary: each code it lists is what
//! a command in that situation exits with, and it lists no other.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{command, run, Spawned};

const LIMIT: Duration = Duration::from_secs(120);

/// The codes of the README's "Exit codes" table, in order.
fn readme_codes() -> Vec<i32> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"));
    let text = readme.unwrap();
    let table = text.split("## Exit codes").nth(1).unwrap_or_default();
    table
        .lines()
        .skip_while(|l| !l.starts_with("| code"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.trim_matches('|').split('|').next()?.trim().parse().ok())
        .collect()
}

#[test]
fn every_exit_code_of_the_readme_is_what_its_situation_gives() {
    let _serial = common::serial();
    assert_eq!(readme_codes(), [0, 1, 2, 130]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = out.to_str().unwrap();
    // 0: a sweep that measured right.
    let r = run(
        &[
            "sweep", "--ranks", "2", "-b", "1K", "-e", "4K", "--iters", "3", "--out", o,
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 0, "{r:?}");
    // 1: a verdict that failed (no call takes under a picosecond).
    let crit = tmp.path().join("crit.toml");
    std::fs::write(&crit, "[[criterion]]\nmax_time_us = 0.000001\n").unwrap();
    let r = run(
        &["accept", "--criteria", crit.to_str().unwrap(), "--run", o],
        LIMIT,
    );
    assert_eq!(r.code(), 1, "{r:?}");
    // 2: bad usage.
    let r = run(&["sweep", "--iters", "0x"], LIMIT);
    assert_eq!(r.code(), 2, "{r:?}");
    // 2 too: an nccl-tests flag collbench has no meaning for, refused in one line.
    let r = run(&["sweep", "-p", "1"], LIMIT);
    assert_eq!(r.code(), 2, "{r:?}");
    assert_eq!(r.stderr.lines().count(), 1, "{r:?}");
    assert!(
        r.stderr.contains("-p 1 (nccl-tests --parallel_init"),
        "{r:?}"
    );
    // 130: interrupted, the points measured kept.
    let long = tmp.path().join("long");
    let args = [
        "sweep",
        "--ranks",
        "2",
        "-b",
        "1K",
        "-e",
        "1K",
        "--iters",
        "1000000",
        "--no-progress",
    ];
    let mut cmd = command(&args);
    cmd.arg("--out").arg(&long);
    let started = Spawned::start(cmd);
    let running = common::wait_until(LIMIT, || long.join("meta.json").is_file());
    assert!(running, "the sweep did not start");
    common::signal(started.pid(), libc::SIGINT);
    let r = started.finish(Instant::now(), common::hang_limit(LIMIT));
    assert_eq!(r.code(), 130, "{r:?}");
}
