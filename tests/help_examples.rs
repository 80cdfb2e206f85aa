//! Every example in every command's `--help` runs as written, in a folder holding what the
//! examples name: results folders from real host sweeps, the fit.json the first `fit` example
//! writes, logs of other tools, a model and a criteria file. An example that fails is a help
//! text that lies. (None needs a GPU, MPI or a second host.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use clap::CommandFactory;
use common::exe;

const LIMIT: Duration = Duration::from_secs(600);

/// The examples of `cmd`'s help, each as its words, comments left out.
fn examples(cmd: &str) -> Vec<Vec<String>> {
    let app = collbench::cli::Cli::command();
    let Some(sub) = app.find_subcommand(cmd) else {
        panic!("no subcommand {cmd}");
    };
    let text = sub
        .get_after_help()
        .map(|t| t.to_string())
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("Examples:") {
            inside = true;
            continue;
        }
        if !inside || line.trim().is_empty() {
            inside &= !line.trim().is_empty() || out.is_empty();
            continue;
        }
        let code = line.split(" #").next().unwrap_or(line).trim();
        if let Some(rest) = code.strip_prefix("collbench ") {
            out.push(rest.split_whitespace().map(str::to_string).collect());
        }
    }
    out
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name)
}

/// Runs collbench in `dir`; (exit code, stderr).
fn collbench(dir: &Path, args: &[String]) -> (i32, String) {
    let mut cmd = Command::new(exe());
    cmd.args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for var in common::LAUNCHER_VARS {
        cmd.env_remove(var);
    }
    let r =
        common::Spawned::start(cmd).finish(std::time::Instant::now(), common::hang_limit(LIMIT));
    (r.status.code().unwrap_or(-1), r.stderr)
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// The folder the examples run in.
fn sandbox() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::os::unix::fs::symlink(repo.join("bench-configs"), d.join("bench-configs")).unwrap();
    // Two runs of every op the projections use, at three world sizes (cross-world models).
    let sweep = "sweep --op allreduce,allgather,reducescatter,alltoall,sendrecv --ranks 4 \
                 --world-sizes 2,3,4 -b 1K -e 256K -f 16 --iters 5 --warmup 1 --no-progress --out";
    for run in ["results/run-a", "results/run-b"] {
        let mut args = words(sweep);
        args.push(run.into());
        let (code, err) = collbench(d, &args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    for name in ["run", "a", "b", "before", "after"] {
        copy_dir(&d.join("results/run-a"), &d.join("results").join(name));
    }
    let nccl = |f: &str| data(&format!("nccl-tests/{f}"));
    std::fs::copy(
        nccl("all_reduce_v2.18.0_tagged_stderr_versionheader.log"),
        d.join("all_reduce_perf.log"),
    )
    .unwrap();
    std::fs::copy(
        nccl("all_reduce_v2.17.8_10node_80rank_h100.log"),
        d.join("ar-ring.log"),
    )
    .unwrap();
    std::fs::copy(
        nccl("constructed/all_reduce_v2.17.8_jsonv1_CONSTRUCTED.json"),
        d.join("run.json"),
    )
    .unwrap();
    std::fs::create_dir(d.join("logs")).unwrap();
    std::fs::copy(
        nccl("all_gather_v2.18.0_tagged_stderr_versionheader.log"),
        d.join("logs/ag.log"),
    )
    .unwrap();
    std::fs::copy(
        data("osu/osu_allreduce_v5.6.2_default_64rank_2node_impi.txt"),
        d.join("osu_allreduce.txt"),
    )
    .unwrap();
    copy_dir(
        &data("nccl-inspector/job-2rank"),
        &d.join("nccl-inspector-1234"),
    );
    std::fs::write(d.join("my-model.toml"), "base = \"llama2-7b\"\n").unwrap();
    std::fs::write(d.join("my.toml"), "[[criterion]]\nmax_time_us = 1e9\n").unwrap();
    tmp
}

/// What `cmd`'s examples need from the ones before: the `project` examples' host-fit.json (the
/// fit of the host runs), the `report` examples' verdict.json.
fn prepare(d: &Path, cmd: &str) {
    match cmd {
        "project" if d.join("fit.json").is_file() => {
            std::fs::copy(d.join("fit.json"), d.join("host-fit.json")).unwrap();
        }
        "report" => {
            let accept = "accept --criteria my.toml --run results/run --out verdict-run";
            let (code, err) = collbench(d, &words(accept));
            assert!(ran("accept", code), "{err}");
            std::fs::copy(d.join("verdict-run/verdict.json"), d.join("verdict.json")).unwrap();
        }
        _ => {}
    }
}

/// Removes what an earlier example of `cmd` wrote where the next writes too: outputs are never
/// overwritten without --force, and each example must run as written.
fn clear_outputs(d: &Path, cmd: &str) {
    let written: &[&str] = match cmd {
        "plot" => &["results/run/plots", "figs"],
        "report" => &["results/run/report.html", "ticket-1234.html"],
        _ => &[],
    };
    for w in written {
        let p = d.join(w);
        let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
    }
}

/// What an example may exit with: 0, and for `accept` also 1 (a verdict: the thresholds of a
/// criteria file meant for an idle machine may not hold on a busy one).
fn ran(cmd: &str, code: i32) -> bool {
    code == 0 || (cmd == "accept" && code == 1)
}

#[test]
fn every_help_example_runs_as_written() {
    let _serial = common::serial();
    let tmp = sandbox();
    let d = tmp.path();
    let mut failed = Vec::new();
    // In the order their outputs are needed: fit.json, then the projection folder, ...
    for cmd in [
        "fit", "project", "anchors", "plot", "compare", "accept", "report", "import",
    ] {
        let list = examples(cmd);
        assert!(!list.is_empty(), "{cmd} --help shows no example");
        prepare(d, cmd);
        for ex in list {
            clear_outputs(d, cmd);
            let (code, err) = collbench(d, &ex);
            if !ran(cmd, code) {
                failed.push(format!(
                    "collbench {}: exit {code}: {}",
                    ex.join(" "),
                    err.trim()
                ));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "examples that do not run:\n{}",
        failed.join("\n")
    );
}

/// The first words of `collbench --help` and the sweep's value lists come from the definitions
/// of the ops, algorithms and backends, so a new one cannot be left out.
#[test]
fn help_names_every_op_algorithm_and_backend() {
    use collbench::collective::{Algo, Op};
    use collbench::model::call::BackendKind;
    let help = |args: &[&str]| {
        let out = Command::new(exe()).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let top = help(&["--help"]);
    let about = top.split("Usage:").next().unwrap_or_default();
    for op in Op::ALL {
        assert!(about.contains(op.name()), "{op} missing from: {about}");
    }
    for b in BackendKind::ALL {
        assert!(about.contains(b.name()), "{b} missing from: {about}");
    }
    let sweep = help(&["sweep", "--help"]);
    let ops: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
    let algos: Vec<&str> = Algo::ALL.iter().map(|a| a.name()).collect();
    for list in [ops.join(", "), algos.join(", ")] {
        assert!(
            sweep.contains(&format!("[possible values: {list}]")),
            "{list}: {sweep}"
        );
    }
    for b in BackendKind::ALL {
        for op in Op::ALL {
            let offered: Vec<&str> = b.algos(*op).iter().map(|a| a.name()).collect();
            let line = format!("{op} {}", offered.join("|"));
            assert!(
                sweep.contains(&line),
                "--algo help lacks '{line}' under {b}"
            );
        }
    }
}
