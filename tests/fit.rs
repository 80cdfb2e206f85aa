//! `collbench fit` on real sweeps of the host backend, and on broken inputs: every refusal is
//! exit 2 with one line naming the file (and line, for CSV).

mod common;

use std::fs;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use collbench::fit::schema::FitFile;
use common::{run, serial, sweep_ok, Run};

const LIMIT: Duration = Duration::from_secs(120);

/// One real sweep shared by the tests: ring AllGather and AllReduce at worlds 2 and 3, 1 KiB to
/// 1 MiB (11 sizes), few iterations.
fn real_run() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, std::path::PathBuf)> = OnceLock::new();
    let (_, dir) = DIR.get_or_init(|| {
        let _guard = serial();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        sweep_ok(
            &[
                "--op",
                "allgather,allreduce",
                "--ranks",
                "3",
                "--world-sizes",
                "2,3",
                "-b",
                "1K",
                "-e",
                "1M",
                "--iters",
                "30",
                "--warmup",
                "3",
            ],
            &out,
            LIMIT,
        );
        (tmp, out)
    });
    dir
}

fn fit(args: &[&str]) -> Run {
    let mut full = vec!["fit"];
    full.extend_from_slice(args);
    run(&full, LIMIT)
}

/// A copy of the real run in a fresh folder, for tests that break a file.
fn copy_run(to: &Path) -> std::path::PathBuf {
    let dst = to.join("copy");
    fs::create_dir_all(&dst).unwrap();
    for f in ["meta.json", "summary.csv", "samples.csv", "ranks.csv"] {
        fs::copy(real_run().join(f), dst.join(f)).unwrap();
    }
    dst
}

fn refused(r: &Run, names: &[&str]) {
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected: {}", r.stderr);
    for n in names {
        assert!(lines[0].contains(n), "'{n}' missing from: {}", lines[0]);
    }
}

/// Every curve's line either has sane quality (R² above zero, every size within 50%) or is
/// flagged too noisy, with a note naming it and a warning on stderr: never a silent misfit.
fn sane_or_flagged(f: &FitFile, r: &Run) {
    for c in &f.curves {
        let l = &c.line;
        let q = &l.quality;
        assert!(q.r2.is_finite() && q.r2 <= 1.0, "{q:?}");
        assert!(q.rel_err_mean.is_finite() && q.rel_err_max >= q.rel_err_mean);
        assert!(
            l.alpha_us.value >= 0.0 && l.beta_ns_per_byte.value >= 0.0,
            "{l:?}"
        );
        assert!(l.alpha_us.ci[0] <= l.alpha_us.value && l.alpha_us.value <= l.alpha_us.ci[1]);
        assert_eq!(c.points.len(), c.sizes, "every size's error is stated");
        let worst = c.points.iter().map(|p| p.rel_err.abs()).fold(0.0, f64::max);
        assert!(worst.is_finite() && (worst - q.rel_err_max).abs() < 1e-6 * (1.0 + worst));
        let (op, what) = (format!(" {} ", c.key.op), format!("world {}:", c.key.world));
        let noted = f
            .notes
            .iter()
            .any(|n| n.contains(&op) && n.contains(&what) && n.contains("too noisy"));
        assert_eq!(c.too_noisy, noted, "{what} {:?}", f.notes);
        // Which curves are too noisy depends on the machine's load; that the rule flags what it
        // should is held on curves of known answer (tests/fit_known_lines.rs).
        if c.too_noisy {
            assert!(r.stderr.contains("too noisy to fit"), "{}", r.stderr);
        }
    }
}

#[test]
fn a_real_sweep_fits_with_sane_quality_and_predicts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fit.json");
    let r = fit(&[real_run().to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(
        r.stdout.contains("allgather") && r.stdout.contains("R2"),
        "{}",
        r.stdout
    );
    let f = FitFile::read(&out).expect("fit.json reads back");
    // 2 ops × 2 worlds, out of place.
    assert_eq!(f.curves.len(), 4, "{:#?}", f.notes);
    sane_or_flagged(&f, &r);
    for c in f.curves.iter().filter(|c| !c.too_noisy) {
        let l = &c.line;
        assert_eq!(c.sizes, 11);
        // Values only: how fast this machine is, idle or loaded, is not the test's business.
        assert!(l.alpha_us.value.is_finite(), "{l:?}");
        let bw = l.bandwidth_gbps.unwrap();
        assert!(bw.is_finite() && bw > 0.0, "bandwidth {bw} GB/s");
        assert!(c.loso.is_some() && !c.segments.is_empty() && c.segments.len() <= 3);
    }
    assert_eq!(f.models.len(), 2, "{:#?}", f.notes);
    for m in &f.models {
        assert_eq!((m.form.as_str(), m.worlds.clone()), ("ring", vec![2, 3]));
        assert_eq!(m.holdout.len(), 2);
        assert!(m.quality.r2.is_finite());
    }
    let p = fit(&[
        out.to_str().unwrap(),
        "--predict",
        "op=allgather,algo=ring,world=64,bytes=1G",
        "--json",
    ]);
    assert_eq!(p.code(), 0, "{p:?}");
    let v: serde_json::Value = serde_json::from_str(p.stdout.trim()).unwrap();
    let t = v["time_us"].as_f64().unwrap();
    let i = &v["interval_us"];
    assert!(t > 0.0 && v["busbw_gbps"].as_f64().unwrap() > 0.0, "{v}");
    assert!(
        i[0].as_f64().unwrap() <= t && t <= i[1].as_f64().unwrap(),
        "{v}"
    );
    assert_eq!(v["extrapolated"], true);
}

/// A sweep measured while every core is busy (one spinning thread per core, beside the ranks)
/// still fits: each size's error is stated, and a line that misses is flagged too noisy, never
/// a silent R² below zero.
#[test]
fn a_sweep_measured_on_a_busy_machine_fits_or_says_it_is_too_noisy() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    {
        let _guard = serial();
        let _busy = common::load::Busy::every_core();
        sweep_ok(
            &[
                "--op",
                "allgather",
                "--ranks",
                "3",
                "--world-sizes",
                "2,3",
                "-b",
                "1K",
                "-e",
                "1M",
                "--iters",
                "30",
                "--warmup",
                "3",
            ],
            &run,
            LIMIT,
        );
    }
    let out = tmp.path().join("fit.json");
    let r = fit(&[run.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{r:?}");
    let f = FitFile::read(&out).expect("fit.json reads back");
    assert_eq!(f.curves.len(), 2, "{:#?}", f.notes);
    sane_or_flagged(&f, &r);
    let flagged: Vec<_> = f.curves.iter().filter(|c| c.too_noisy).collect();
    eprintln!(
        "busy machine: {} of 2 curves flagged; R2 {:?}",
        flagged.len(),
        f.curves
            .iter()
            .map(|c| c.line.quality.r2)
            .collect::<Vec<_>>()
    );
}

/// A real sweep of Bruck's AllToAll at 2, 3 and 4 ranks fits the bruck form (beside the
/// log-linear law) across world sizes, and `--predict op=alltoall,algo=bruck` answers from it.
#[test]
fn a_bruck_alltoall_sweep_fits_its_form_and_predicts() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    {
        let _guard = serial();
        #[rustfmt::skip]
        sweep_ok(
            &[
                "--op", "alltoall", "--algo", "bruck", "--ranks", "4", "--world-sizes", "2,3,4",
                "-b", "1K", "-e", "256K", "--iters", "20", "--warmup", "3",
            ],
            &run_dir,
            LIMIT,
        );
    }
    let out = tmp.path().join("fit.json");
    let r = fit(&[run_dir.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{r:?}");
    let f = FitFile::read(&out).expect("fit.json reads back");
    let forms: Vec<&str> = f.models.iter().map(|m| m.form.as_str()).collect();
    assert_eq!(forms, ["bruck", "log-linear"], "{:#?}", f.notes);
    let m = &f.models[0];
    assert_eq!((m.op.name(), m.algo.name()), ("alltoall", "bruck"));
    assert_eq!(m.worlds, [2, 3, 4]);
    assert!(
        m.formula.starts_with("ceil(log2 p)·alpha + b(p)/p·S·beta"),
        "{}",
        m.formula
    );
    let p = fit(&[
        out.to_str().unwrap(),
        "--predict",
        "op=alltoall,algo=bruck,world=16,bytes=1M",
        "--json",
    ]);
    assert_eq!(p.code(), 0, "{p:?}");
    let v: serde_json::Value = serde_json::from_str(p.stdout.trim()).unwrap();
    assert_eq!(
        (v["op"].as_str(), v["algo"].as_str()),
        (Some("alltoall"), Some("bruck"))
    );
    let selected = f.models.iter().find(|m| m.selected).unwrap();
    assert_eq!(v["form"].as_str(), Some(selected.form.as_str()), "{v}");
    assert!(v["time_us"].as_f64().unwrap() > 0.0, "{v}");
    assert_eq!(v["extrapolated"], true);
}

#[test]
fn predicting_an_op_without_a_model_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fit.json");
    let r = fit(&[real_run().to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{r:?}");
    let p = fit(&[
        out.to_str().unwrap(),
        "--predict",
        "op=reducescatter,world=8,bytes=1M",
    ]);
    refused(&p, &["no model for reducescatter ring", "allgather ring"]);
    let p = fit(&[out.to_str().unwrap(), "--predict", "op=allgather,world=8"]);
    refused(&p, &["--predict", "bytes"]);
}

#[test]
fn broken_results_are_refused_naming_file_and_line_and_cut_ones_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = copy_run(tmp.path());
    let samples = dir.join("samples.csv");
    let text = fs::read_to_string(&samples).unwrap();
    let cut = &text[..text.len() - 3];
    fs::write(&samples, cut).unwrap();
    let r = fit(&[
        dir.to_str().unwrap(),
        "-o",
        tmp.path().join("cut.json").to_str().unwrap(),
    ]);
    // A last line cut off (a crash, a full disk) is read up to the last complete point.
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(
        r.stderr.contains("samples.csv") && r.stderr.contains("cut off"),
        "{}",
        r.stderr
    );

    // A negative time on line 3.
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let cols: Vec<&str> = lines[0].split(',').collect();
    let t = cols.iter().position(|c| *c == "time_us").unwrap();
    let mut row: Vec<String> = lines[2].split(',').map(String::from).collect();
    row[t] = "-4.5".into();
    lines[2] = row.join(",");
    fs::write(&samples, lines.join("\n") + "\n").unwrap();
    let r = fit(&[
        dir.to_str().unwrap(),
        "-o",
        tmp.path().join("f.json").to_str().unwrap(),
    ]);
    refused(&r, &["samples.csv", "line 3", "-4.5"]);

    row[t] = "NaN".into();
    lines[2] = row.join(",");
    fs::write(&samples, lines.join("\n") + "\n").unwrap();
    let r = fit(&[
        dir.to_str().unwrap(),
        "-o",
        tmp.path().join("f.json").to_str().unwrap(),
    ]);
    refused(&r, &["samples.csv", "line 3"]);
}

#[test]
fn empty_foreign_and_mixed_inputs_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("f.json");
    let o = o.to_str().unwrap();
    let dir = copy_run(tmp.path());
    fs::write(dir.join("summary.csv"), "").unwrap();
    refused(
        &fit(&[dir.to_str().unwrap(), "-o", o]),
        &["summary.csv", "empty file"],
    );

    fs::write(dir.join("summary.csv"), "name,value\nx,1\n").unwrap();
    refused(
        &fit(&[dir.to_str().unwrap(), "-o", o]),
        &["summary.csv", "line 1"],
    );

    let dir = copy_run(&tmp.path().join("b"));
    let meta = fs::read_to_string(dir.join("meta.json")).unwrap();
    let other = meta.replace("collbench.meta/v1", "collbench.meta/v9");
    fs::write(dir.join("meta.json"), other).unwrap();
    refused(
        &fit(&[dir.to_str().unwrap(), "-o", o]),
        &["meta.json", "collbench.meta/v9"],
    );

    let json = tmp.path().join("foreign.json");
    fs::write(&json, "{\"schema\": \"something/v1\"}").unwrap();
    refused(
        &fit(&[
            json.to_str().unwrap(),
            "--predict",
            "op=allgather,world=2,bytes=1K",
        ]),
        &["foreign.json", "something/v1"],
    );
    fs::write(&json, "").unwrap();
    refused(
        &fit(&[
            json.to_str().unwrap(),
            "--predict",
            "op=allgather,world=2,bytes=1K",
        ]),
        &["foreign.json", "empty"],
    );

    refused(
        &fit(&[tmp.path().join("nope").to_str().unwrap(), "-o", o]),
        &["nope", "not a results folder"],
    );
    refused(&fit(&[]), &["results folders"]);
}

#[test]
fn a_run_with_one_size_is_reported_not_guessed() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    sweep_ok(
        &[
            "--op",
            "allgather",
            "--ranks",
            "2",
            "-b",
            "4K",
            "-e",
            "4K",
            "--iters",
            "5",
        ],
        &out,
        LIMIT,
    );
    let r = fit(&[
        out.to_str().unwrap(),
        "-o",
        tmp.path().join("f.json").to_str().unwrap(),
    ]);
    refused(&r, &["nothing could be fitted", "too few"]);
}
