//! `collbench compare A B` on a real run and edited copies of it: an injected slowdown is a
//! regression (exit 1), one in the summary alone with the same samples is noise, unmatched
//! points are reported, bad input exits 2.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::recorded::Recorded;
use common::{run, Run};

const LIMIT: Duration = Duration::from_secs(120);

/// One real sweep: ring AllReduce, 2 ranks, 1 KiB to 16 KiB (5 points).
fn recorded() -> &'static Path {
    static RUN: Recorded = Recorded::new();
    RUN.dir(
        &[
            "--op",
            "allreduce",
            "--ranks",
            "2",
            "-b",
            "1K",
            "-e",
            "16K",
            "--iters",
            "10",
            "--warmup",
            "2",
        ],
        LIMIT,
    )
}

/// A copy of the recorded run whose summary.csv rows are passed through `edit` (column name
/// → field map, row index).
fn edited(to: &Path, edit: impl Fn(usize, &mut Vec<(String, String)>)) -> PathBuf {
    let dst = to.join("b");
    fs::create_dir_all(&dst).unwrap();
    for f in ["meta.json", "summary.csv", "samples.csv", "ranks.csv"] {
        fs::copy(recorded().join(f), dst.join(f)).unwrap();
    }
    let text = fs::read_to_string(dst.join("summary.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let mut out = header.join(",") + "\n";
    for (i, line) in lines.enumerate() {
        let mut row: Vec<(String, String)> = header
            .iter()
            .cloned()
            .zip(line.split(',').map(String::from))
            .collect();
        edit(i, &mut row);
        let fields: Vec<String> = row.into_iter().map(|(_, v)| v).collect();
        out.push_str(&(fields.join(",") + "\n"));
    }
    fs::write(dst.join("summary.csv"), out).unwrap();
    dst
}

/// Scales the per-iteration times of summary row `point` in `dir`'s samples.csv by `factor`,
/// as a slowdown of the whole distribution would.
fn scale_samples(dir: &Path, point: usize, factor: f64) {
    let path = dir.join("samples.csv");
    let text = fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
    let (p, t, f) = (col("point"), col("time_us"), col("fastest_us"));
    let mut out = header.join(",") + "\n";
    for line in lines {
        let mut cells: Vec<String> = line.split(',').map(String::from).collect();
        if cells[p] == point.to_string() {
            for c in [t, f] {
                cells[c] = scale(factor)(&cells[c]);
            }
        }
        out.push_str(&(cells.join(",") + "\n"));
    }
    fs::write(path, out).unwrap();
}

fn set(row: &mut [(String, String)], col: &str, f: impl Fn(&str) -> String) {
    let cell = row.iter_mut().find(|(k, _)| k == col).unwrap();
    cell.1 = f(&cell.1);
}

fn scale(factor: f64) -> impl Fn(&str) -> String {
    move |v: &str| (v.parse::<f64>().unwrap() * factor).to_string()
}

fn compare(args: &[&str]) -> Run {
    let mut full = vec!["compare"];
    full.extend_from_slice(args);
    run(&full, LIMIT)
}

#[test]
fn a_run_compared_with_itself_has_no_regression() {
    let a = recorded().to_str().unwrap();
    let r = compare(&[a, a]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(
        r.stdout
            .contains("5 points matched, 0 regression(s) beyond +5% median time"),
        "{}",
        r.stdout
    );
    let j = compare(&[a, a, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    for p in v["points"].as_array().unwrap() {
        assert_eq!(
            (p["time_ratio"].as_f64(), p["busbw_ratio"].as_f64()),
            (Some(1.0), Some(1.0))
        );
        assert_eq!(p["status"], "same");
    }
}

#[test]
fn an_injected_slowdown_is_a_regression() {
    let tmp = tempfile::tempdir().unwrap();
    // Point 2 (4 KiB) takes twice as long in B; point 3 (8 KiB) 3% longer (within 5%).
    let b = edited(tmp.path(), |i, row| {
        let factor = match i {
            2 => 2.0,
            3 => 1.03,
            _ => return,
        };
        set(row, "time_us_median", scale(factor));
        set(row, "busbw_gbps", scale(1.0 / factor));
    });
    // The same medians over unchanged samples: the samples say nothing moved.
    let (a_text, b_text) = (recorded().to_str().unwrap(), b.to_str().unwrap());
    let unchanged = compare(&[a_text, b_text, "--json"]);
    assert_eq!(unchanged.code(), 0, "{unchanged:?}");
    let v: serde_json::Value = serde_json::from_str(&unchanged.stdout).unwrap();
    assert_eq!(
        (
            v["points"][2]["status"].as_str(),
            v["points"][2]["p_value"].as_f64()
        ),
        (Some("same"), Some(1.0))
    );
    scale_samples(&b, 2, 2.0);
    scale_samples(&b, 3, 1.03);
    let (a, b) = (recorded().to_str().unwrap(), b.to_str().unwrap());
    let r = compare(&[a, b]);
    assert_eq!(r.code(), 1, "{r:?}");
    let flagged: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.contains("REGRESSION"))
        .collect();
    assert_eq!(flagged.len(), 1, "{}", r.stdout);
    assert!(
        flagged[0].starts_with("allreduce ring f32 w2 4 KiB"),
        "{}",
        flagged[0]
    );
    assert!(
        flagged[0].contains("2.000") && flagged[0].contains("0.500"),
        "{}",
        flagged[0]
    );
    assert!(flagged[0].contains("+100.0% time"), "{}", flagged[0]);
    // A 2% threshold catches the 3% slowdown too once noise is not asked about (no floor,
    // --alpha 1 leaves the rank test out: 3% of ten noisy samples is not significant); 150%
    // lets both pass.
    let loose = ["--threshold", "2%", "--min-diff-us", "0", "--alpha", "1"];
    let caught = compare(&[&[a, b][..], &loose[..]].concat());
    assert_eq!(caught.stdout.matches("REGRESSION").count(), 2, "{caught:?}");
    let strict = compare(&[a, b, "--threshold", "2%"]);
    assert_eq!(strict.stdout.matches("REGRESSION").count(), 1, "{strict:?}");
    assert_eq!(compare(&[a, b, "--threshold", "150"]).code(), 0);
    // --json: one object with the same judgement.
    let j = compare(&[a, b, "--json"]);
    assert_eq!(j.code(), 1);
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(
        (v["schema"].as_str(), v["regressions"].as_u64()),
        (Some("collbench.compare/v1"), Some(1))
    );
    assert_eq!(v["points"][2]["status"], "regression");
    assert!((v["points"][2]["time_ratio"].as_f64().unwrap() - 2.0).abs() < 1e-9);
    // B faster than A is no regression: swap them.
    let swapped = compare(&[b, a]);
    assert_eq!(swapped.code(), 0, "{swapped:?}");
    assert!(swapped.stdout.contains("1 faster"), "{}", swapped.stdout);
}

#[test]
fn wrong_results_and_unmatched_points_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let b = edited(tmp.path(), |i, row| match i {
        0 => set(row, "wrong", |_| "7".into()),
        4 => set(row, "bytes", |_| "32768".into()),
        _ => {}
    });
    let r = compare(&[recorded().to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(r.code(), 1, "{r:?}");
    assert!(
        r.stdout.contains("WRONG (7 wrong elements in B)"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("only in A: allreduce ring f32 w2 16 KiB"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("only in B: allreduce ring f32 w2 32 KiB"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("4 points matched"), "{}", r.stdout);
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let a = recorded().to_str().unwrap();
    let one_line = |r: &Run, want: &str| {
        assert_eq!(r.code(), 2, "{r:?}");
        let lines = r.stderr_lines();
        assert_eq!(lines.len(), 1, "{}", r.stderr);
        assert!(
            lines[0].contains(want),
            "'{want}' missing from {}",
            lines[0]
        );
        assert!(!r.stderr.contains("panicked"));
    };
    one_line(&compare(&[a, a, "--threshold", "-5%"]), "--threshold '-5%'");
    one_line(
        &compare(&[a, a, "--threshold", "lots"]),
        "--threshold 'lots'",
    );
    let missing = tmp.path().join("nope");
    one_line(&compare(&[a, missing.to_str().unwrap()]), "nope");
    let f64s = edited(tmp.path(), |_, row| set(row, "dtype", |_| "f64".into()));
    one_line(&compare(&[a, f64s.to_str().unwrap()]), "no point in common");
    one_line(&compare(&[a]), "B");
}
