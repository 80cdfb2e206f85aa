//! `collbench fit FIT.json --export FORMAT` on a hand-written fit.json: the export goes to stdout
//! (or --export-out) and nothing else does; bad formats and missing models are one-line errors
//! with exit 2.

mod common;

use std::path::Path;
use std::time::Duration;

use collbench::collective::{Algo, DType, Op};
use collbench::fit::schema::*;
use common::{run, Run};

const LIMIT: Duration = Duration::from_secs(60);

fn p(v: f64) -> Param {
    Param {
        value: v,
        stderr: 0.0,
        ci: [v, v],
    }
}

fn quality() -> Quality {
    Quality {
        r2: 0.99,
        rel_err_mean: 0.01,
        rel_err_max: 0.02,
        samples: 90,
        downweighted: 0,
        groups: 30,
    }
}

/// A single-level model fitted on 2, 4 and 8 ranks.
fn model(op: Op, algo: Algo, form: &str, alpha_us: f64, beta: f64) -> WorldModel {
    let named = |name: &str, v| NamedParam {
        name: name.into(),
        param: p(v),
    };
    WorldModel {
        backend: "host".into(),
        op,
        algo,
        dtype: DType::F32,
        in_place: false,
        proto: None,
        comm: Default::default(),
        traffic: None,
        form: form.into(),
        formula: "(p-1)·alpha + (p-1)/p·S·beta".into(),
        params: vec![named("alpha_us", alpha_us), named("beta_ns_per_byte", beta)],
        covariance: vec![vec![0.0; 2]; 2],
        t_quantile: 2.0,
        worlds: vec![2, 4, 8],
        nodes: vec![1, 1, 1],
        quality: quality(),
        holdout: vec![],
        selected: true,
        extrapolation: None,
        selection: None,
    }
}

/// Writes a fit.json with `models` into `dir`.
fn write_fit(dir: &Path, models: Vec<WorldModel>) -> String {
    let fit = FitFile {
        schema: FIT_SCHEMA.into(),
        collbench_version: "0.1.0".into(),
        created: "2026-01-01T00:00:00Z".into(),
        method: Method {
            objective: "hand-written".into(),
            robust: "none".into(),
            intervals: "none".into(),
            confidence: 0.95,
            segments: "none".into(),
            max_segments: 3,
            min_sizes_per_segment: 4,
        },
        sources: vec![],
        curves: vec![],
        models,
        notes: vec![],
        slowdowns: vec![],
    };
    let path = dir.join("fit.json");
    fit.write(&path).unwrap();
    path.to_str().unwrap().to_string()
}

fn ring_models() -> Vec<WorldModel> {
    vec![
        model(Op::AllGather, Algo::Ring, "ring", 5.0, 0.1),
        model(Op::AllReduce, Algo::Ring, "ring", 7.0, 0.2),
    ]
}

fn fit(args: &[&str]) -> Run {
    let mut full = vec!["fit"];
    full.extend_from_slice(args);
    run(&full, LIMIT)
}

fn refused(r: &Run, names: &[&str]) {
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "one line expected: {}", r.stderr);
    for n in names {
        assert!(lines[0].contains(n), "'{n}' missing from: {}", lines[0]);
    }
}

#[test]
fn astra_sim_export_goes_to_stdout_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write_fit(tmp.path(), ring_models());
    let r = fit(&[&f, "--export", "astra-sim"]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    assert!(r.stdout.starts_with("# ASTRA-sim"), "{}", r.stdout);
    let data: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    // AllGather: alpha 5 µs → 5000 ns; beta 0.1 ns/B = 10 GB/s = 9.31323 ASTRA-sim GB/s (2^30 B).
    assert_eq!(
        data,
        [
            "topology: [ Ring ]",
            "npus_count: [ 8 ]",
            "bandwidth: [ 9.31323 ]",
            "latency: [ 5000 ]"
        ],
        "{}",
        r.stdout
    );
}

#[test]
fn export_out_writes_the_file_and_a_status_line() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write_fit(tmp.path(), ring_models());
    let out = tmp.path().join("system-networks.json");
    let r = fit(&[
        &f,
        "--export",
        "calculon",
        "--export-out",
        out.to_str().unwrap(),
        "--npus",
        "64",
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let n = &v["networks"][0];
    assert_eq!(n["size"], 64);
    assert_eq!(n["bandwidth"].as_f64(), Some(10.0));
}

#[test]
fn unknown_format_and_missing_model_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write_fit(tmp.path(), ring_models());
    let r = fit(&[&f, "--export", "nope"]);
    refused(
        &r,
        &["nope", "astra-sim", "calculon", "nccl-tuner", "inductor"],
    );

    let tree = write_fit(
        tmp.path(),
        vec![model(Op::AllReduce, Algo::Tree, "tree", 4.0, 0.3)],
    );
    let r = fit(&[&tree, "--export", "astra-sim"]);
    refused(&r, &["--export astra-sim", "no ring or two-level model"]);

    let r = fit(&[&f, "--npus", "8"]);
    refused(&r, &["--export"]);
}

#[test]
fn nodes_alone_scale_out_at_the_ranks_per_node_fitted_and_counts_are_bounded() {
    let profile = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/bench-configs/profiles/h100-ib400.json"
    );
    let r = fit(&[profile, "--export", "nccl-tuner", "--nodes", "4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("# For 32 ranks on 4 node(s)"),
        "{}",
        r.stdout
    );
    assert!(r
        .stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .all(|l| l.contains(",4,32,")));
    // The h100 profile's AllReduce for Inductor: 8 ranks per node within (1/beta_intra) and the
    // whole 2048-rank ring across.
    let r = fit(&[profile, "--export", "inductor"]);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let line = |key: &str| {
        (r.stdout.lines())
            .find(|l| l.starts_with(&format!("inductor_config.{key} = ")))
            .unwrap_or_else(|| panic!("no {key}: {}", r.stdout))
            .to_string()
    };
    assert!(
        line("intra_node_bw").contains("busbw 360 GB/s"),
        "{}",
        r.stdout
    );
    assert!(line("inter_node_bw").contains("GB/s"), "{}", r.stdout);
    for format in ["nccl-tuner", "astra-sim", "calculon", "inductor"] {
        let r = fit(&[
            profile,
            "--export",
            format,
            "--npus",
            "18446744073709551615",
        ]);
        refused(&r, &["--npus", "1048576"]);
    }
}
