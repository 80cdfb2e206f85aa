//! Hostile values in what `collbench project`, `fit --predict` and `compare` read: counts that
//! would size memory or a loop without bound, and physically absurd numbers in hardware, model,
//! fit and summary files. Each must be refused at once with exit 2 and one line that names the
//! value, never a panic, never gigabytes of memory.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{run, Run};

/// Wide: a refusal takes milliseconds; only a hang or a runaway allocation comes near it.
const LIMIT: Duration = Duration::from_secs(60);

/// Exit 2, one stderr line (`collbench: ...`) naming every piece of `names`, no panic.
fn refused(args: &[&str], names: &[&str]) {
    let r = run(args, LIMIT);
    assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    assert_eq!(r.status.code(), Some(2), "{args:?}: {r:?}");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{args:?}: {}", r.stderr);
    assert!(lines[0].starts_with("collbench: "), "{}", lines[0]);
    for n in names {
        assert!(lines[0].contains(n), "{args:?}: '{}' lacks {n}", lines[0]);
    }
}

fn project_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["project", "--profile", "h100-ib400", "--model", "llama2-7b"];
    args.extend_from_slice(extra);
    args
}

#[test]
fn world_lists_are_bounded_before_they_are_expanded() {
    let huge = "1,2,...,18446744073709551615";
    refused(
        &project_args(&["--world-sizes", huge]),
        &["--world-sizes", "18446744073709551615"],
    );
    refused(
        &project_args(&["--world-sizes", "1073741824"]),
        &["1073741824", "1048576"],
    );
    refused(
        &project_args(&["--world-sizes", "8,16,...,1073741824"]),
        &["1073741824"],
    );
    refused(
        &project_args(&["--tp", "99999999999"]),
        &["--tp", "99999999999"],
    );
}

#[test]
fn the_replay_timeout_is_bounded_as_the_sweep_s_is() {
    refused(
        &project_args(&["--replay", "--replay-timeout", "18446744073709551615s"]),
        &["--replay-timeout", "24h"],
    );
    refused(
        &project_args(&["--replay", "--replay-timeout", "25h"]),
        &["--replay-timeout 1day 1h"],
    );
}

#[test]
fn counts_that_size_loops_or_memory_are_bounded() {
    for (flag, value) in [
        ("--global-batch", "1000000000000"),
        ("--microbatches", "1000000000000"),
        ("--seq-len", "1000000000000"),
    ] {
        refused(&project_args(&[flag, value]), &[flag, value]);
    }
}

fn toml(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn model_sizes_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    for layers in ["1000000000", "9223372036854775807"] {
        let text = format!("base = \"llama2-7b\"\nlayers = {layers}\n");
        let m = toml(tmp.path(), "m.toml", &text);
        let args = [
            "project",
            "--profile",
            "h100-ib400",
            "--model",
            m.to_str().unwrap(),
        ];
        refused(&args, &["m.toml", "layers", layers, "10000"]);
    }
}

#[test]
fn absurd_hardware_numbers_are_refused_by_one_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("node_network_gbps = nan", "node_network_gbps"),
        ("node_network_gbps = -400.0", "node_network_gbps"),
        ("nvlink_gbps = 0.0", "nvlink_gbps"),
        ("peak_tflops = 1e300", "peak_tflops"),
        ("peak_tflops = 1e-300", "peak_tflops"),
        ("peak_tflops = -989.0", "peak_tflops"),
        ("hbm_tbps = inf", "hbm_tbps"),
        ("gpus_per_node = 100000000000", "gpus_per_node"),
    ];
    for (line, field) in cases {
        let h = toml(tmp.path(), "h.toml", &format!("base = \"h100\"\n{line}\n"));
        let args = project_args(&["--hardware", h.to_str().unwrap()]);
        refused(&args, &["h.toml", field, "outside"]);
    }
}

/// A bundled profile written out as a fit.json, with `edit` applied to its JSON.
fn edited_fit(dir: &Path, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let text = include_str!("../bench-configs/profiles/h100-ib400.json");
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    edit(&mut v);
    let p = dir.join("fit.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    p
}

#[test]
fn fits_with_negative_or_absurd_parameters_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let negative = edited_fit(tmp.path(), |v| {
        v["models"][0]["params"][0]["value"] = serde_json::json!(-5.0);
    });
    let args = [
        "project",
        "--fit",
        negative.to_str().unwrap(),
        "--hardware",
        "h100",
        "--model",
        "llama2-7b",
    ];
    refused(&args, &["fit.json", "models[0].params[0]", "-5"]);
    let huge = edited_fit(tmp.path(), |v| {
        v["models"][1]["params"][1]["value"] = serde_json::json!(1e300);
    });
    let predict = [
        "fit",
        "--predict",
        "op=allgather,world=64,bytes=1G",
        huge.to_str().unwrap(),
    ];
    let r = run(&predict, LIMIT);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    assert!(r.stderr.contains("models[1].params[1]"), "{}", r.stderr);
}

#[test]
fn repeated_predict_keys_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let fit = edited_fit(tmp.path(), |_| {});
    let args = [
        "fit",
        "--predict",
        "op=allgather,world=64,bytes=1G,world=8",
        fit.to_str().unwrap(),
    ];
    refused(&args, &["world", "twice"]);
}

/// A real one-point results folder from a tiny sweep.
fn small_run(dir: &Path) -> PathBuf {
    let out = dir.join("run");
    let args = [
        "--ranks", "2", "-b", "1K", "-e", "1K", "--iters", "3", "--warmup", "1",
    ];
    common::sweep_ok(&args, &out, LIMIT);
    out
}

/// `dir`'s summary.csv with `column` of the first data row set to `value`.
fn set_summary(dir: &Path, column: &str, value: &str) {
    let path = dir.join("summary.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let at = lines[0].split(',').position(|c| c == column).unwrap();
    let mut fields: Vec<String> = lines[1].split(',').map(String::from).collect();
    fields[at] = value.into();
    lines[1] = fields.join(",");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
}

fn summary_refused(run_dir: &Path, column: &str, value: &str) -> Run {
    set_summary(run_dir, column, value);
    let dir = run_dir.to_str().unwrap();
    let r = run(&["compare", dir, dir], LIMIT);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.status.code(), Some(2), "{column}={value}: {r:?}");
    let line = r.stderr_lines().join("\n");
    for name in ["summary.csv", "line 2", column, value] {
        assert!(line.contains(name), "'{line}' lacks {name}");
    }
    r
}

#[test]
fn summary_rows_with_impossible_values_are_refused() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_run(tmp.path());
    let original = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    for (column, value) in [
        ("time_us_median", "-3"),
        ("time_us_mean", "0"),
        ("algbw_gbps", "-1"),
        ("busbw_gbps", "1e300"),
        ("world", "0"),
    ] {
        std::fs::write(dir.join("summary.csv"), &original).unwrap();
        summary_refused(&dir, column, value);
    }
}

#[test]
fn endless_sources_are_read_to_their_cap_and_refused() {
    // /dev/zero reports a length of 0 and never ends; each reader stops one byte past its cap.
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = small_run(tmp.path());
    let rd = run_dir.to_string_lossy().to_string();
    let svg = tmp.path().join("p.svg").to_string_lossy().to_string();
    let imp = tmp.path().join("imp").to_string_lossy().to_string();
    refused(
        &["accept", "--criteria", "/dev/zero"],
        &["/dev/zero", "4 MiB a criteria file"],
    );
    refused(
        &["report", &rd, "--fit", "/dev/zero"],
        &["64 MiB a fit.json"],
    );
    refused(
        &["report", &rd, "--verdict", "/dev/zero"],
        &["64 MiB a verdict.json"],
    );
    refused(
        &["plot", &rd, "--projection", "/dev/zero", "--out", &svg],
        &["64 MiB a projection JSON"],
    );
    refused(
        &["import", "nccl-tests", "/dev/zero", "--out", &imp],
        &["256 MiB a log may have; split it"],
    );
    let model = tmp.path().join("m.toml");
    std::os::unix::fs::symlink("/dev/zero", &model).unwrap();
    let model = model.to_string_lossy().to_string();
    refused(
        &["project", "--model", &model, "--profile", "h100-ib400"],
        &["4 MiB a spec file"],
    );
    // A results file that is one endless line.
    std::fs::remove_file(run_dir.join("summary.csv")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", run_dir.join("summary.csv")).unwrap();
    refused(
        &["report", &rd],
        &["summary.csv", "line 1: a line longer than 1024 KiB"],
    );
}

#[test]
fn control_bytes_from_a_file_are_escaped_before_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_run(tmp.path());
    set_summary(&dir, "op", "all\u{1b}]0;owned\u{7}reduce");
    let r = run(&["report", dir.to_str().unwrap()], LIMIT);
    assert_eq!(r.status.code(), Some(2), "{r:?}");
    assert!(
        !r.stderr.contains('\u{1b}') && !r.stderr.contains('\u{7}'),
        "{:?}",
        r.stderr
    );
    assert!(
        r.stderr.contains("all\\u{1b}]0;owned\\u{7}reduce"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
}

#[test]
fn a_later_schema_is_refused_and_a_cut_summary_under_a_complete_run_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_run(tmp.path());
    let d = dir.to_str().unwrap();
    // summary.csv cut in its last row while meta.json says complete (a copy cut short): the
    // complete rows are read, the later rows of samples.csv ignored.
    let summary = dir.join("summary.csv");
    let text = std::fs::read_to_string(&summary).unwrap();
    std::fs::write(&summary, &text[..text.len() - 10]).unwrap();
    let r = run(&["report", d], LIMIT);
    assert_eq!(r.status.code(), Some(0), "{r:?}");
    assert!(r.stderr.contains("was cut off"), "{}", r.stderr);
    // A file of a schema this collbench does not read.
    let meta = dir.join("meta.json");
    let text = std::fs::read_to_string(&meta).unwrap();
    std::fs::write(
        &meta,
        text.replace("collbench.summary/v1", "collbench.summary/v2"),
    )
    .unwrap();
    refused(
        &["report", d, "--force"],
        &[
            "summary.csv is collbench.summary/v2",
            "reads collbench.summary/v1",
        ],
    );
}

#[test]
fn confusing_paths_get_the_message_for_what_they_are() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = small_run(tmp.path());
    let crit = tmp.path().join("crit.toml");
    std::fs::write(&crit, "[[criterion]]\nmax_time_us = 1e6\n").unwrap();
    let folder = tmp.path().join("a-folder");
    std::fs::create_dir(&folder).unwrap();
    let (c, d, f) = (
        crit.to_str().unwrap(),
        dir.to_str().unwrap(),
        folder.to_str().unwrap(),
    );
    refused(
        &["accept", "--criteria", c, "--run", d, "--junit", f],
        &["is a folder"],
    );
    refused(
        &[
            "accept",
            "--criteria",
            c,
            "--run",
            d,
            "--junit",
            f,
            "--force",
        ],
        &["is a folder"],
    );
    let lp = tmp.path().join("loop.json");
    std::os::unix::fs::symlink(&lp, &lp).unwrap();
    let spec = "op=allreduce,world=2,bytes=1K";
    refused(
        &["fit", lp.to_str().unwrap(), "--predict", spec],
        &["symbolic links"],
    );
}
