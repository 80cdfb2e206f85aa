//! The shared-memory transport's two ways of moving a message (`COLLBENCH_SHM_COPY`): staged
//! through the segment's slots, or read single-copy from the sender's buffer. Every op,
//! algorithm, dtype and placement must be exactly right either way at 2, 3 and 4 ranks, at sizes
//! above the single-copy threshold (64 KiB messages) and the chain Broadcast's (1 MiB).
//! `single` moves every message single-copy (reductions and barrier tokens included), `staged`
//! none, `auto` the large copied ones: all three checked against the same exact expected values,
//! so they agree with each other bit for bit.

mod common;

use std::time::Duration;

use common::{command, summary, tempdir, Spawned};

const OPS: &str = "allreduce,allgather,reducescatter,broadcast,reduce";
const DTYPES: &str = "f32,f64,f16,bf16,i32";
/// Catches a launcher hang only: a silent rank ends its run after the sweep's --timeout (60 s), and
/// with every core busy one sweep took up to three minutes.
const LIMIT: Duration = Duration::from_secs(900);

/// Sweeps every op at `ranks` ranks with `COLLBENCH_SHM_COPY=mode` over 70001, 630009 and
/// 5670081 bytes (odd, so counts round down and blocks differ in size); returns each point's
/// (op, algo, dtype, in_place, bytes, wrong).
fn sweep_with(mode: &str, ranks: usize) -> Vec<(String, String, String, bool, usize, u64)> {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let ranks_text = ranks.to_string();
    #[rustfmt::skip]
    let args = [
        "sweep", "--no-progress", "--out", out.to_str().unwrap(),
        "--op", OPS, "--algo", "ring,tree,recursive-doubling", "--dtype", DTYPES,
        "--in-place", "both", "--ranks", &ranks_text, "-b", "70001", "-e", "6M", "-f", "9",
        "--iters", "1", "--warmup", "0", "--timeout", "60s",
    ];
    let mut cmd = command(&args);
    cmd.env("COLLBENCH_SHM_COPY", mode);
    let run = Spawned::start(cmd).finish(std::time::Instant::now(), LIMIT);
    assert_eq!(run.code(), 0, "{mode} at {ranks} ranks: {}", run.stderr);
    assert!(
        !run.stderr.contains("cannot read rank"),
        "single-copy refused here: {}",
        run.stderr
    );
    let options = common::meta(&out).options;
    assert_eq!(options["shm_copy"], mode, "meta.json options: {options}");
    let mut points: Vec<_> = summary(&out)
        .iter()
        .map(|r| {
            let k = &r.key;
            let (op, algo, dtype) = (k.op.to_string(), k.algo.to_string(), k.dtype.to_string());
            (op, algo, dtype, k.in_place, k.bytes, r.wrong)
        })
        .collect();
    points.sort();
    points
}

fn check_modes_agree(ranks: usize) {
    let staged = sweep_with("staged", ranks);
    assert!(staged.len() >= 5 * 5 * 2 * 2, "{} points", staged.len());
    let wrong: Vec<_> = staged.iter().filter(|p| p.5 != 0).collect();
    assert!(wrong.is_empty(), "staged at {ranks} ranks: {wrong:?}");
    for mode in ["single", "auto"] {
        let got = sweep_with(mode, ranks);
        let wrong: Vec<_> = got.iter().filter(|p| p.5 != 0).collect();
        assert!(wrong.is_empty(), "{mode} at {ranks} ranks: {wrong:?}");
        assert_eq!(got, staged, "{mode} and staged measured different points");
    }
}

#[test]
fn copy_modes_are_exact_and_agree_at_2_ranks() {
    check_modes_agree(2);
}

#[test]
fn copy_modes_are_exact_and_agree_at_3_ranks() {
    check_modes_agree(3);
}

#[test]
fn copy_modes_are_exact_and_agree_at_4_ranks() {
    check_modes_agree(4);
}

#[test]
fn a_bad_copy_mode_is_one_line_naming_the_fix() {
    let (_tmp, out) = tempdir();
    #[rustfmt::skip]
    let args = ["sweep", "--no-progress", "--out", out.to_str().unwrap(), "--ranks", "2",
                "-b", "1K", "-e", "1K", "--iters", "1", "--warmup", "0"];
    let mut cmd = command(&args);
    cmd.env("COLLBENCH_SHM_COPY", "twice");
    let run = Spawned::start(cmd).finish(std::time::Instant::now(), Duration::from_secs(30));
    assert_eq!(run.code(), 2, "{}", run.stderr);
    assert_eq!(
        run.stderr.trim(),
        "collbench: COLLBENCH_SHM_COPY=twice is not a copy mode; use auto, staged or single"
    );
    assert!(!out.join("summary.csv").exists());
}
