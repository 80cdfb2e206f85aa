//! Output files are never overwritten without --force, default results folders never collide,
//! a report refuses a verdict judged on other runs, and the numbers that size memory or time are
//! bounded with one line and exit 2.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::recorded::{refused, Recorded};
use common::{command, run, serial, Spawned};

const LIMIT: Duration = Duration::from_secs(120);

/// One real sweep shared by the tests: ring AllReduce, 2 ranks, 1 KiB to 16 KiB.
fn recorded() -> &'static Path {
    static RUN: Recorded = Recorded::new();
    RUN.dir(
        &["--ranks", "2", "-b", "1K", "-e", "16K", "--iters", "20"],
        LIMIT,
    )
}

/// Runs `args` twice: the second must be refused naming `file` and --force and leave it as it
/// was; with --force it succeeds.
fn second_write_refused(args: &[&str], file: &Path) {
    let first = run(args, LIMIT);
    assert_eq!(first.code(), 0, "{first:?}");
    let before = fs::read(file).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    refused(&run(args, LIMIT), &[name, "already exists", "--force"]);
    assert_eq!(fs::read(file).unwrap(), before, "{name} was changed");
    let mut forced = args.to_vec();
    forced.push("--force");
    let r = run(&forced, LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let dir = file.parent().unwrap();
    let tmp = fs::read_dir(dir).unwrap().flatten().find(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.contains(".tmp") || e.metadata().unwrap().len() == 0
    });
    assert!(tmp.is_none(), "left behind: {:?}", tmp.map(|e| e.path()));
}

#[test]
fn fit_report_plot_project_and_accept_keep_earlier_outputs_without_force() {
    let run_dir = recorded().to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let at = |n: &str| tmp.path().join(n);
    let fit = at("fit.json");
    second_write_refused(&["fit", run_dir, "-o", fit.to_str().unwrap()], &fit);
    let page = at("report.html");
    second_write_refused(&["report", run_dir, "-o", page.to_str().unwrap()], &page);
    let figs = at("figs");
    let plot = [
        "plot",
        run_dir,
        "--out",
        figs.to_str().unwrap(),
        "--format",
        "svg",
    ];
    second_write_refused(&plot, &figs.join("busbw-allreduce.svg"));
    let proj = at("proj");
    let project = [
        "project",
        "--profile",
        "a100-ib200",
        "--model",
        "llama2-7b",
        "--world-sizes",
        "8",
        "--out",
        proj.to_str().unwrap(),
    ];
    second_write_refused(&project, &proj.join("projection.csv"));
    let criteria = at("c.toml");
    fs::write(
        &criteria,
        "name = \"t\"\n[[criterion]]\nname = \"correct\"\nmax_wrong = 0\n",
    )
    .unwrap();
    let verdicts = at("verdicts");
    let accept = [
        "accept",
        "--criteria",
        criteria.to_str().unwrap(),
        "--run",
        run_dir,
        "--out",
        verdicts.to_str().unwrap(),
    ];
    second_write_refused(&accept, &verdicts.join("verdict.json"));
}

#[test]
fn report_refuses_a_verdict_judged_on_another_run() {
    let tmp = tempfile::tempdir().unwrap();
    let criteria = tmp.path().join("c.toml");
    fs::write(
        &criteria,
        "name = \"t\"\n[[criterion]]\nname = \"correct\"\nmax_wrong = 0\n",
    )
    .unwrap();
    let verdicts = tmp.path().join("v");
    let other = tmp.path().join("other");
    fs::create_dir(&other).unwrap();
    for f in ["meta.json", "summary.csv", "samples.csv", "ranks.csv"] {
        fs::copy(recorded().join(f), other.join(f)).unwrap();
    }
    let r = run(
        &[
            "accept",
            "--criteria",
            criteria.to_str().unwrap(),
            "--run",
            other.to_str().unwrap(),
            "--out",
            verdicts.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 0, "{r:?}");
    let verdict = verdicts.join("verdict.json");
    let page = tmp.path().join("r.html");
    let report = |run_dir: &Path| {
        let (d, v, o) = (
            run_dir.to_str().unwrap(),
            verdict.to_str().unwrap(),
            page.to_str().unwrap(),
        );
        run(&["report", d, "--verdict", v, "-o", o, "--force"], LIMIT)
    };
    refused(&report(recorded()), &["verdict.json", "other", "judged"]);
    assert!(!page.exists());
    assert_eq!(report(&other).code(), 0);
}

#[test]
fn sweeps_started_together_without_out_get_their_own_folders() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let start = |_| {
        let mut cmd = command(&[
            "sweep",
            "--no-progress",
            "--ranks",
            "2",
            "-b",
            "8",
            "-e",
            "8",
        ]);
        cmd.args(["--iters", "2", "--warmup", "0"])
            .current_dir(tmp.path());
        Spawned::start(cmd)
    };
    let started = Instant::now();
    let both: Vec<Spawned> = (0..2).map(start).collect();
    for s in both {
        let r = s.finish(started, LIMIT);
        assert_eq!(r.code(), 0, "{r:?}");
    }
    let names: Vec<String> = fs::read_dir(tmp.path().join("results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn numbers_that_size_memory_or_time_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let sweep = |flag: &str, value: &str| {
        let o = out.to_str().unwrap();
        run(
            &[
                "sweep", "--ranks", "2", "-b", "8", "-e", "8", "--out", o, flag, value,
            ],
            LIMIT,
        )
    };
    let huge = "18446744073709551615";
    refused(&sweep("--iters", huge), &["--iters", huge, "1000000"]);
    refused(&sweep("--warmup", huge), &["--warmup", huge, "1000000"]);
    refused(&sweep("--timeout", "100000000h"), &["--timeout", "24h"]);
    assert!(!out.exists());
}

#[test]
fn a_warm_up_that_outlasts_the_timeout_is_a_stall() {
    let _guard = serial();
    let (_tmp, out) = common::tempdir();
    let o = out.to_str().unwrap();
    // A million warm-up calls of 16 MiB take minutes anywhere; progress must not be seen.
    let args = [
        "sweep",
        "--no-progress",
        "--ranks",
        "2",
        "-b",
        "16M",
        "-e",
        "16M",
        "--iters",
        "1",
        "--warmup",
        "1000000",
        "--timeout",
        "2s",
        "--out",
        o,
    ];
    let r = run(&args, Duration::from_secs(90));
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("made no progress"), "{}", r.stderr);
}
