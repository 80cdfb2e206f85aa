//! The published 3D-parallel runs of docs/METHODOLOGY.md "Against published training
//! throughputs", projected from the bundled model files as a user would: the layouts those
//! runs used need full activation recomputation to fit, and with it the projection lands where
//! the table says (an upper bound on throughput, within the documented error).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::recorded::refused;
use common::{csv_rows, run};

const LIMIT: Duration = Duration::from_secs(60);

fn project(model: &str, extra: &[&str]) -> (String, Vec<BTreeMap<String, String>>) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    let model = format!("bench-configs/models/{model}.toml");
    // The roofline as it is: these runs check it is an upper bound on speed.
    let mut args = vec!["project", "--profile", "a100-ib200", "--model", &model];
    args.extend_from_slice(&["--calibration", "none"]);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    let r = run(&args, LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    (r.stdout, csv_rows(&out.join("projection.csv")))
}

fn step_s(row: &BTreeMap<String, String>) -> f64 {
    row["step_time_s"].parse().unwrap()
}

#[test]
fn megatron_1t_needs_recomputation_and_lands_below_the_published_step() {
    let layout = [
        "--tp",
        "8",
        "--pp",
        "64",
        "--world-sizes",
        "3072",
        "--global-batch",
        "3072",
    ];
    let (stdout, rows) = project("megatron-1t", &layout);
    assert!(stdout.contains("does not fit"), "{stdout}");
    assert_eq!(rows[0]["fits_memory"], "false");
    let mut with = layout.to_vec();
    with.push("--recompute");
    let (_, rows) = project("megatron-1t", &with);
    assert_eq!(rows[0]["fits_memory"], "true");
    // Published: 502 PFLOP/s on 3072 GPUs for 96·B·s·l·h²·(1 + s/6h + V/16lh) = 5.139e19 FLOP
    // per iteration (Narayanan et al. 2021, eq. 3 and Table 1): 102.4 s. The roofline is an
    // upper bound on speed: 89.2 s (−13%).
    let published = 5.139e19 / 502e15;
    let ratio = step_s(&rows[0]) / published;
    assert!((0.80..1.0).contains(&ratio), "projected/published {ratio}");
}

#[test]
fn mt_nlg_loses_per_gpu_throughput_with_scale_as_published() {
    let (_, rows) = project(
        "mt-nlg-530b",
        &[
            "--tp",
            "8",
            "--pp",
            "35",
            "--world-sizes",
            "2240,2800,3360",
            "--global-batch",
            "1920",
            "--recompute",
        ],
    );
    // Smith et al. 2022 §2.4: 60.1, 50.2 and 44.4 s per iteration.
    let published = [60.1, 50.2, 44.4];
    let per_gpu: Vec<f64> = rows
        .iter()
        .map(|r| r["tokens_per_s_per_gpu"].parse().unwrap())
        .collect();
    assert!(per_gpu.windows(2).all(|w| w[1] < w[0]), "{per_gpu:?}");
    for (row, p) in rows.iter().zip(published) {
        let ratio = step_s(row) / p;
        assert!((0.6..1.0).contains(&ratio), "{}: {ratio}", row["world"]);
    }
}

/// `collbench anchors` projects every run of bench-configs/anchors.toml: a row each in
/// anchors.csv, the projected step finite, its error the projected over the published step,
/// and the series' table on stdout.
#[test]
fn every_bundled_anchor_is_projected_with_its_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("a");
    let r = run(&["anchors", "--out", out.to_str().unwrap()], LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let text = std::fs::read_to_string("bench-configs/anchors.toml").unwrap();
    let ids: Vec<&str> = (text.lines())
        .filter_map(|l| l.strip_prefix("id = \""))
        .map(|l| l.trim_end_matches('"'))
        .collect();
    assert!(ids.len() >= 8, "{ids:?}");
    let rows = csv_rows(&out.join("anchors.csv"));
    let got: Vec<&str> = rows.iter().map(|r| r["id"].as_str()).collect();
    assert_eq!(got, ids);
    for row in &rows {
        let f = |k: &str| row[k].parse::<f64>().unwrap();
        let (published, projected) = (f("published_step_s"), f("projected_step_s"));
        assert!(projected.is_finite() && projected > 0.0, "{row:?}");
        assert!(
            (f("error") - (projected / published - 1.0)).abs() < 1e-9,
            "{row:?}"
        );
        assert!(r.stdout.contains(&row["id"]), "{}", r.stdout);
    }
    // At least three series of one model at several GPU counts.
    let series: std::collections::BTreeSet<&str> = (rows.iter())
        .map(|r| r["series"].as_str())
        .filter(|s| !s.is_empty())
        .collect();
    assert!(series.len() >= 3, "{series:?}");
    for s in &series {
        assert!(r.stdout.contains(&format!("  {s} ")), "{s}: {}", r.stdout);
    }
}

#[test]
fn a_bad_anchors_file_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("anchors.toml");
    std::fs::write(
        &path,
        "[[anchor]]\nid = \"x\"\nsource = \"s\"\nprofile = \"h100-ib400\"\nmodel = \"llama2-7b\"\n\
         world = 12\ntp = 8\nglobal_batch = 16\nstep_s = 1\n",
    )
    .unwrap();
    let r = run(&["anchors", path.to_str().unwrap()], LIMIT);
    refused(&r, &["world 12 is not a multiple of tp 8"]);
}

/// `--calibrate` fits each profile's calibration and projects every anchor with the one
/// fitted without its series: anchors.csv's held-out columns hold it, and stdout says which
/// parameters were kept and how their held-out error compares with the roofline's.
#[test]
fn calibrating_reports_held_out_errors_beside_the_rooflines() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let r = run(
        &["anchors", "--calibrate", "--out", out.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stdout.contains("# kept: "), "{}", r.stdout);
    assert!(
        r.stdout.contains("held-out mean |error|") && r.stdout.contains("(roofline "),
        "{}",
        r.stdout
    );
    let rows = csv_rows(&out.join("anchors.csv"));
    for row in &rows {
        let f = |k: &str| row[k].parse::<f64>().unwrap();
        let (published, held) = (f("published_step_s"), f("heldout_step_s"));
        assert!(
            (f("heldout_error") - (held / published - 1.0)).abs() < 1e-9,
            "{row:?}"
        );
        assert!((0.5..=4.0).contains(&f("compute_scale")), "{row:?}");
        assert!((0.5..=4.0).contains(&f("memory_scale")), "{row:?}");
        assert!((0.0..=0.05).contains(&f("layer_gap_s")), "{row:?}");
    }
    // Without --calibrate the held-out columns are empty.
    let plain = tmp.path().join("p");
    let r = run(&["anchors", "--out", plain.to_str().unwrap()], LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(csv_rows(&plain.join("anchors.csv"))
        .iter()
        .all(|row| row["heldout_step_s"].is_empty()));
    // An earlier anchors.csv is kept unless --force: one line, exit 2, before any work.
    let again = ["anchors", "--out", plain.to_str().unwrap()];
    let r = run(&again, LIMIT);
    refused(&r, &["pass --force"]);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let r = run(&[&again[..], &["--force"]].concat(), LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
}

/// `project` says which calibration it used and how the published runs on its GPU land held
/// out with it, beside the roofline's errors: by default a calibration only where it beats the
/// roofline held out (A100's bundled runs), else the roofline (H100's); a framework's runs on
/// request; an unknown framework is one line and exit 2.
#[test]
fn a_projection_says_its_calibration_and_how_the_published_runs_land_held_out() {
    let tmp = tempfile::tempdir().unwrap();
    let project = |profile: &str, calibration: Option<&str>| {
        let out = tmp
            .path()
            .join(format!("{profile}-{}", calibration.unwrap_or("default")));
        #[rustfmt::skip]
        let mut args = vec!["project", "--profile", profile, "--model", "llama2-7b",
            "--world-sizes", "8", "--out", out.to_str().unwrap()];
        if let Some(c) = calibration {
            args.extend_from_slice(&["--calibration", c]);
        }
        let r = run(&args, LIMIT);
        let step = (r.code() == 0).then(|| {
            csv_rows(&out.join("projection.csv"))[0]["step_time_s"]
                .parse::<f64>()
                .unwrap()
        });
        (r, step)
    };
    let text = std::fs::read_to_string("bench-configs/anchors.toml").unwrap();
    let on_a100 = text.matches("profile = \"a100-ib200\"").count();
    let (r, calibrated) = project("a100-ib200", None);
    let want = format!("fitted to the {on_a100} published runs on a100; held out a series");
    assert!(r.stderr.contains(&want), "{}", r.stderr);
    let (r, roofline) = project("a100-ib200", Some("none"));
    assert!(
        r.stderr.contains("calibration: none, the roofline"),
        "{}",
        r.stderr
    );
    assert!(
        calibrated.unwrap() > roofline.unwrap() * 1.1,
        "{calibrated:?} {roofline:?}"
    );
    let (r, _) = project("h100-ib400", None);
    assert!(r.stderr.contains("does not beat it"), "{}", r.stderr);
    let (r, fsdp) = project("h100-ib400", Some("pytorch-fsdp"));
    assert!(
        r.stderr
            .contains("published pytorch-fsdp runs on h100; held out"),
        "{}",
        r.stderr
    );
    assert!(fsdp.is_some(), "{r:?}");
    // The flat rule sets every kernel's rate: asking for a calibration with it is refused.
    #[rustfmt::skip]
    let flat = ["project", "--profile", "a100-ib200", "--model", "llama2-7b", "--world-sizes", "8",
        "--compute-efficiency", "0.5", "--calibration", "all"];
    let r = run(&flat, LIMIT);
    refused(&r, &["leave --calibration out"]);
    let (r, _) = project("h100-ib400", Some("megatron-deepspeed"));
    refused(&r, &["those on h100: pytorch-fsdp, megatron-lm"]);
}

/// The calibration `collbench anchors --calibrate` keeps from the bundled runs is fitted per
/// profile and framework and beats the roofline held out (the per-GPU choice of `project`'s
/// default is checked above).
#[test]
fn the_kept_calibration_beats_the_roofline_held_out() {
    let r = run(&["anchors", "--calibrate"], LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(
        r.stdout
            .contains("per profile and framework (beats the roofline held out, on average and at"),
        "{}",
        r.stdout
    );
}
