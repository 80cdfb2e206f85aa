//! `collbench project` with a fit that measured collectives under compute (`sweep
//! --with-compute`, fit.json `slowdowns`): the measured slowdowns replace the default σ unless
//! `--overlap-slowdown` is given, the run says which it used, and projection.json records it.

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// The H100 profile plus the slowdowns of a ReduceScatter beside the cache load at three sizes
/// (compute x1.3, x1.5, x1.4 and the calls x1.1, x1.2, x1.3: medians 1.4 and 1.2).
fn fit_with_slowdowns(dir: &Path) -> PathBuf {
    let mut v = common::h100_profile();
    let point = |bytes: u64, call: f64, compute: f64| {
        json!({"bytes": bytes, "slowdown_median": call, "slowdown_max": call,
               "compute_slowdown_median": compute, "groups": 2})
    };
    v["slowdowns"] = json!([{
        "backend": "host", "op": "reducescatter", "algo": "ring", "dtype": "f32", "redop": "sum", "world": 2,
        "in_place": false, "concurrent": "compute cache",
        "points": [point(1 << 16, 1.1, 1.3), point(1 << 20, 1.2, 1.5), point(1 << 24, 1.3, 1.4)],
    }]);
    let path = dir.join("fit.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

fn project(fit: &Path, out: &Path, extra: &[&str]) -> (common::Run, Value) {
    #[rustfmt::skip]
    let args = ["--fit", fit.to_str().unwrap(), "--hardware", "h100", "--model", "llama2-7b",
        "--world-sizes", "64"];
    common::project_ok(&[&args[..], extra].concat(), out)
}

/// A value of the request's step options (projection.json's `request`).
fn opt<'a>(json: &'a Value, name: &str) -> &'a Value {
    &json["request"][name]
}

#[test]
fn measured_slowdowns_replace_the_default_and_a_given_sigma_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let fit = fit_with_slowdowns(tmp.path());
    let (r, measured) = project(&fit, &tmp.path().join("m"), &[]);
    assert!(
        r.stderr.contains("measured them beside a cache load"),
        "{}",
        r.stderr
    );
    assert_eq!(opt(&measured, "overlap_source"), "measured");
    let sigma = opt(&measured, "overlap_slowdown").as_f64().unwrap();
    assert!((sigma - 0.4).abs() < 1e-12, "{sigma}");
    let comm = opt(&measured, "comm_overlap_slowdown").as_f64().unwrap();
    assert!((comm - 1.2).abs() < 1e-12, "{comm}");
    // The same σ given by hand leaves the collectives as fast as alone: no more exposed.
    let (r, given) = project(&fit, &tmp.path().join("g"), &["--overlap-slowdown", "0.4"]);
    assert!(!r.stderr.contains("beside a cache load"), "{}", r.stderr);
    assert_eq!(opt(&given, "overlap_source"), "given");
    assert_eq!(opt(&given, "comm_overlap_slowdown"), 1.0);
    let exposed = |j: &Value| j["rows"][0]["metrics"]["exposed_comm_s"].as_f64().unwrap();
    assert!(exposed(&measured) >= exposed(&given), "{measured}\n{given}");
    // Without slowdowns in the fit, the table's first line names the default.
    let profile =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/profiles/h100-ib400.json");
    let (r, plain) = project(&profile, &tmp.path().join("d"), &[]);
    assert!(
        r.stdout.contains("overlap slowdown 19% (Lee et al. 2025)"),
        "{}",
        r.stdout
    );
    assert!(!r.stderr.contains("beside a"), "{}", r.stderr);
    assert_eq!(opt(&plain, "overlap_source"), "default");
}
