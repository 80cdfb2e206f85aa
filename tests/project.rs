//! `collbench project` run as a user would: a bundled profile to a table and files, and every
//! kind of bad input refused with exit 2 and one line.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{csv_rows, Run};

const LIMIT: Duration = Duration::from_secs(60);

fn project(args: &[&str]) -> Run {
    common::run_cmd("project", args, LIMIT)
}

/// Exit 2, one stderr line naming every piece of `names`, nothing on stdout.
fn refused(args: &[&str], names: &[&str]) {
    let r = project(args);
    assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    assert_eq!(r.code(), 2, "{args:?}: {r:?}");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{args:?}: {}", r.stderr);
    assert!(lines[0].starts_with("collbench: "), "{}", lines[0]);
    for n in names {
        assert!(lines[0].contains(n), "{args:?}: '{}' lacks {n}", lines[0]);
    }
    assert_eq!(r.stdout, "", "{args:?}");
}

#[test]
fn a_profile_projects_to_a_table_csv_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("proj");
    let r = project(&[
        "--profile",
        "h100-ib400",
        "--model",
        "llama2-7b",
        "--world-sizes",
        "8,16,...,2048",
        "--tp",
        "1,2,4",
        "--pp",
        "1,2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stdout.contains("llama2-7b on h100"), "{}", r.stdout);
    assert_eq!(r.stdout.lines().filter(|l| l.ends_with(" *")).count(), 9);
    let rows = csv_rows(&out.join("projection.csv"));
    assert_eq!(rows.len(), 9 * 6);
    let required = [
        "model",
        "hardware",
        "world",
        "nodes",
        "tp",
        "pp",
        "dp",
        "fits_memory",
        "step_time_s",
        "compute_s",
        "exposed_comm_s",
        "overlapped_comm_s",
        "bubble_s",
        "tokens_per_s",
        "tokens_per_s_per_gpu",
        "mfu",
        "exposed_comm_frac",
        "power_w_per_gpu",
        "tokens_per_joule",
        "speedup",
        "parallel_eff",
        "scaling_eff",
        "comm_compute_ratio",
        "bound",
    ];
    for row in &rows {
        for col in required {
            assert!(row.contains_key(col), "column {col} missing");
        }
        assert_eq!(
            (row["model"].as_str(), row["hardware"].as_str()),
            ("llama2-7b", "h100")
        );
        let world: usize = row["world"].parse().unwrap();
        let (tp, pp, dp): (usize, usize, usize) = (
            row["tp"].parse().unwrap(),
            row["pp"].parse().unwrap(),
            row["dp"].parse().unwrap(),
        );
        assert_eq!(tp * pp * dp, world);
        assert_eq!(row["fits_memory"], "true");
        let step: f64 = row["step_time_s"].parse().unwrap();
        let parts: f64 = [
            "compute_s",
            "overlap_slowdown_s",
            "exposed_comm_s",
            "bubble_s",
        ]
        .iter()
        .map(|c| row[*c].parse::<f64>().unwrap())
        .sum();
        assert!((step / parts - 1.0).abs() < 1e-9, "{row:?}");
        let mfu: f64 = row["mfu"].parse().unwrap();
        // The roofline's default: below H100's measured best GEMM share of peak.
        assert!(mfu > 0.0 && mfu < 0.801, "{row:?}");
        scaling_columns_agree(row, mfu);
    }
    let header = r.stdout.lines().nth(1).unwrap();
    for title in [" S ", " E ", " SE ", " bound"] {
        assert!(header.contains(title), "{header}");
    }
    for note in ["(N_crit, ", "T(N) = ", "fitted without 2048"] {
        assert!(r.stderr.contains(note), "{note}: {}", r.stderr);
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("projection.json")).unwrap())
            .unwrap();
    assert_eq!(json["schema"], "collbench.projection/v1");
    assert_eq!(json["request"]["model"]["name"], "llama2-7b");
    assert_eq!(json["request"]["hardware"]["peak_tflops"], 989.0);
    assert_eq!(json["compute_model"], "roofline");
    assert_eq!(json["network"]["source"], "profile h100-ib400");
    assert_eq!(json["rows"].as_array().unwrap().len(), 9 * 6);
    let layouts = json["layouts"].as_array().unwrap();
    assert_eq!(layouts.len(), 6);
    for l in layouts {
        assert_eq!(l["baseline_world"], 8, "{l}");
        assert!(
            ["within", "below", "beyond"].contains(&l["critical"]["range"].as_str().unwrap()),
            "{l}"
        );
        let fit = &l["step_fit"];
        assert_eq!(
            (&fit["worlds"], &fit["held_out_world"]),
            (&9.into(), &2048.into())
        );
        for f in ["a_s", "b_s_per_gpu", "c_s", "held_out_rel_error"] {
            assert!(fit[f].is_f64(), "{f}: {l}");
        }
    }
    let row0 = &json["rows"][0];
    assert_eq!(
        (&row0["speedup"], &row0["bound"]),
        (&1.0.into(), &"compute".into())
    );
}

/// Speedup, efficiencies, ratio and bound class of one projected CSV row (weak scaling from a
/// baseline of 8 GPUs): SE = S·8/world, E = compute time / step time (the roofline).
fn scaling_columns_agree(row: &std::collections::BTreeMap<String, String>, mfu: f64) {
    let num = |c: &str| -> f64 { row[c].parse().unwrap() };
    let world = num("world");
    assert!(
        (num("scaling_eff") - num("speedup") * 8.0 / world).abs() < 1e-9,
        "{row:?}"
    );
    let computing = num("compute_s") / num("step_time_s");
    assert!(
        (num("parallel_eff") - computing).abs() < 1e-9,
        "{row:?} {mfu}"
    );
    assert!(num("memory_bound_frac") > 0.0 && num("memory_bound_frac") < 1.0);
    let ratio = (num("exposed_comm_s") + num("overlapped_comm_s")) / num("compute_s");
    assert!(
        (num("comm_compute_ratio") / ratio - 1.0).abs() < 1e-9,
        "{row:?}"
    );
    assert!(
        ["compute", "communication", "memory"].contains(&row["bound"].as_str()),
        "{row:?}"
    );
}

#[test]
fn toml_specs_and_a_fit_file_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("half-7b.toml");
    std::fs::write(&model, "base = \"llama2-7b\"\nlayers = 16\n").unwrap();
    let hw = tmp.path().join("h100-hot.toml");
    std::fs::write(&hw, "base = \"h100\"\nidle_w = 200.0\n").unwrap();
    let fit = profile_copy(tmp.path(), |_| true);
    let r = project(&[
        "--fit",
        fit.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--hardware",
        hw.to_str().unwrap(),
        "--world-sizes",
        "8,16",
        "--global-batch",
        "32",
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stdout.contains("half-7b on h100-hot"), "{}", r.stdout);
    assert!(
        r.stdout.contains("strong scaling, global batch 32"),
        "{}",
        r.stdout
    );
}

/// A copy of the H100 profile keeping the models `keep` accepts.
fn profile_copy(dir: &Path, keep: impl Fn(&serde_json::Value) -> bool) -> std::path::PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/profiles/h100-ib400.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    v["models"].as_array_mut().unwrap().retain(|m| keep(m));
    let path = dir.join("fit.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("never");
    let o = out.to_str().unwrap();
    let base = [
        "--profile",
        "h100-ib400",
        "--model",
        "llama2-7b",
        "--out",
        o,
    ];
    let with = |extra: &[&str]| -> Vec<String> { owned(&[&base[..], extra].concat()) };
    let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
        (
            owned(&["--profile", "h100-ib999", "--model", "llama2-7b"]),
            vec!["h100-ib999", "v100-ib100, a100-ib200, h100-ib400"],
        ),
        (
            owned(&["--profile", "h100-ib400", "--model", "llama9"]),
            vec!["llama9", "llama2-7b", "llama3-70b"],
        ),
        (
            with(&["--hardware", "b200"]),
            vec!["b200", "v100, a100, h100, h200"],
        ),
        (with(&["--tp", "3"]), vec!["--tp 3", "32 heads"]),
        (with(&["--pp", "33"]), vec!["--pp 33", "32 layers"]),
        (
            with(&["--world-sizes", "4", "--tp", "1", "--pp", "8"]),
            vec!["world 4", "does not divide world 4"],
        ),
        (
            with(&["--world-sizes", "12"]),
            vec!["world 12", "8-GPU nodes"],
        ),
        (
            with(&["--world-sizes", "8,...,64"]),
            vec!["--world-sizes", "..."],
        ),
        (
            with(&["--compute-efficiency", "0"]),
            vec!["--compute-efficiency"],
        ),
    ];
    for (args, names) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, names);
        assert!(!out.exists(), "{args:?} created {o}");
    }
    // A fit lacking a model the layout needs names the (op, algo, level).
    let fit = profile_copy(tmp.path(), |m| m["op"] != "reducescatter");
    let f = fit.to_str().unwrap();
    refused(
        &[
            "--fit",
            f,
            "--hardware",
            "h100",
            "--model",
            "llama2-7b",
            "--world-sizes",
            "16",
        ],
        &["(reducescatter, ring, inter-node)"],
    );
    refused(
        &["--fit", f, "--model", "llama2-7b"],
        &["--hardware is required with --fit"],
    );
}
