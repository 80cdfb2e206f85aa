//! `collbench project --replay` end to end: sweep the host backend, fit it, project a tiny model
//! on 2 and 4 ranks, replay the projected step, and require measured and projected step times
//! to agree within 15% (median over the timed steps), with enough communication exposed that
//! dropping it from either side would break that band. Bad replay requests exit 2.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use common::{csv_rows, run, serial, sweep_ok};

const LIMIT: Duration = Duration::from_secs(300);
const MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/bench-configs/models/tiny-replay.toml"
);
const HARDWARE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/bench-configs/hardware/host-replay.toml"
);

/// A fit of ring AllGather and ReduceScatter (bf16) at worlds 2 and 4, the sizes of the tiny
/// model's FSDP units, measured on this machine into `dir/fit.json`.
fn host_fit(dir: &Path) -> PathBuf {
    let out = dir.join("run");
    sweep_ok(
        &[
            "--op",
            "allgather,reducescatter",
            "--dtype",
            "bf16",
            "--ranks",
            "4",
            "--world-sizes",
            "2,4",
            "-b",
            "128K",
            "-e",
            "4M",
            "--iters",
            "40",
            "--warmup",
            "5",
        ],
        &out,
        LIMIT,
    );
    let fit = dir.join("fit.json");
    let r = run(
        &[
            "fit",
            out.to_str().unwrap(),
            "--output",
            fit.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 0, "{r:?}");
    fit
}

/// The fit the refusal cases read (any fit will do; measured once).
fn some_fit() -> &'static Path {
    static FIT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, fit) = FIT.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let fit = host_fit(tmp.path());
        (tmp, fit)
    });
    fit
}

fn project(fit: &Path, extra: &[&str]) -> common::Run {
    let mut args = vec![
        "project",
        "--fit",
        fit.to_str().unwrap(),
        "--model",
        MODEL,
        "--hardware",
        HARDWARE,
    ];
    args.extend_from_slice(extra);
    run(&args, LIMIT)
}

/// (median measured/projected, projected exposed-communication share) of one replay, projected
/// from a fit measured just before it (so both see the machine in the same state).
fn replay(world: usize) -> (f64, f64) {
    let tmp = tempfile::tempdir().unwrap();
    let fit = host_fit(tmp.path());
    let out = tmp.path().join("proj");
    let w = world.to_string();
    let r = project(
        &fit,
        &[
            "--world-sizes",
            &w,
            "--replay",
            "--replay-steps",
            "15",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stdout.contains("measured/projected"), "{}", r.stdout);
    let rows = csv_rows(&out.join("replay.csv"));
    assert_eq!(rows.len(), 15);
    let num = |k: &str| -> f64 { rows[0][k].parse().unwrap() };
    let share = num("projected_exposed_comm_s") / num("projected_s");
    let parts = num("projected_compute_s") + num("projected_exposed_comm_s");
    assert!((parts - num("projected_s")).abs() < 1e-9 * num("projected_s"));
    let summary: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with("#   ")).collect();
    eprintln!("world {world}: {}", summary.join(" |"));
    (num("median_ratio"), share)
}

/// Measured within 15% of projected; up to three fits and replays, so that one burst of load
/// from elsewhere on the machine does not decide. A replay that skipped its communication (or its
/// compute), or a projection that left either out, is off by more than the exposed share and
/// fails every attempt.
fn agrees(world: usize) {
    let _guard = serial();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (ratio, share) = replay(world);
        assert!(
            share >= 0.2,
            "world {world}: exposed communication is only {:.0}% of the projected step, too \
             little for the 15% band to tell",
            100.0 * share
        );
        if (ratio - 1.0).abs() <= 0.15 {
            return;
        }
        seen.push(ratio);
    }
    panic!("world {world}: measured/projected medians {seen:?}, none within 15%");
}

#[test]
fn replay_of_two_ranks_agrees_with_projection() {
    agrees(2);
}

#[test]
fn replay_of_four_ranks_agrees_with_projection() {
    agrees(4);
}

#[test]
fn replay_refuses_what_it_cannot_run() {
    let _guard = serial();
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["--world-sizes", "2,4", "--replay"],
            &["--replay", "--world-sizes"],
        ),
        (
            &["--world-sizes", "64", "--replay"],
            &["--world-sizes 64", "cores"],
        ),
        (
            &["--world-sizes", "2", "--tp", "2", "--replay"],
            &["--tp", "FSDP only"],
        ),
        (
            &["--world-sizes", "2", "--pp", "2", "--replay"],
            &["--pp", "FSDP only"],
        ),
        (
            &[
                "--world-sizes",
                "2",
                "--overlap-slowdown",
                "0.19",
                "--replay",
            ],
            &["--overlap-slowdown 0.19", "leave it out"],
        ),
    ];
    for (args, names) in cases {
        let r = project(some_fit(), args);
        assert_eq!(r.code(), 2, "{args:?}: {r:?}");
        let lines = r.stderr_lines();
        assert_eq!(lines.len(), 1, "{args:?}: {}", r.stderr);
        for n in names {
            assert!(lines[0].contains(n), "{args:?}: '{}' lacks {n}", lines[0]);
        }
        assert_eq!(r.stdout, "", "{args:?}");
    }
}
