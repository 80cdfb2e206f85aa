//! `collbench project --ep` with a fit that holds an alltoallv model of the routing model's
//! traffic: every MoE AllToAll is timed by that model at the busiest rank's bytes, the router's
//! load ratio at the layout's expert parallelism, unless `--ep-load` says otherwise.

mod common;

use std::path::{Path, PathBuf};

use collbench::collective::routing::Routing;
use serde_json::{json, Value};

const TRAFFIC: &str = "moe tokens 4096 experts 1 top_k 2 zipf 1.2 seed 0";

/// The H100 profile plus a pairwise alltoallv model within a node (15 µs, 0.004 ns/B) of the
/// routing model's traffic, written to `dir/fit.json`.
fn fit_with_alltoallv(dir: &Path) -> PathBuf {
    let mut v = common::h100_profile();
    let mut m = v["models"][0].clone();
    m["op"] = json!("alltoallv");
    m["algo"] = json!("pairwise");
    m["form"] = json!("pairwise");
    m["formula"] = json!("(p-1)·alpha + (p-1)/p·S·beta");
    m["traffic"] = json!(TRAFFIC);
    m["covariance"] = json!([[0.0, 0.0], [0.0, 0.0]]);
    m["worlds"] = json!([4, 8]);
    m["nodes"] = json!([1, 1]);
    let p = |name: &str, v: f64| json!({"name": name, "value": v, "stderr": 0.0, "ci": [v, v]});
    m["params"] = json!([p("alpha_us", 15.0), p("beta_ns_per_byte", 0.004)]);
    v["models"].as_array_mut().unwrap().push(m);
    let path = dir.join("fit.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

fn project(fit: &Path, out: &Path, extra: &[&str]) -> (common::Run, Value) {
    #[rustfmt::skip]
    let args = ["--fit", fit.to_str().unwrap(), "--hardware", "h100", "--model",
        "mixtral-8x7b", "--seq-len", "4096", "--world-sizes", "32", "--ep", "8", "--reshard"];
    common::project_ok(&[&args[..], extra].concat(), out)
}

#[test]
fn the_fits_router_sets_the_busiest_ranks_bytes_and_its_model_the_time() {
    let tmp = tempfile::tempdir().unwrap();
    let fit = fit_with_alltoallv(tmp.path());
    let (r, json) = project(&fit, &tmp.path().join("a"), &[]);
    assert!(
        r.stderr.contains("load from the fit's alltoallv traffic"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("timed by the fit's alltoallv model"),
        "{}",
        r.stderr
    );
    let router = Routing {
        tokens: 4096,
        experts: 1,
        top_k: 2,
        zipf: 1.2,
        seed: 0,
    };
    assert_eq!(json["request"]["ep_router"]["zipf"], 1.2);
    let load = router.load_ratio(8).unwrap();
    assert!(load > 1.2, "a skewed router loads one rank more: {load}");
    // Mean bytes per rank: 4096 tokens · top-2 · 4096 hidden · 2 bytes; the busiest `load` times
    // that, over the 8 ranks of a node: 7·15 + 7/8·S·0.004 µs (S in kB), 128 per step.
    let s_kb = load * 4096.0 * 2.0 * 4096.0 * 2.0 / 1e3;
    let one_us = 7.0 * 15.0 + 7.0 / 8.0 * s_kb * 0.004;
    let row = &json["rows"][0];
    assert_eq!(row["alltoall_model"], "alltoallv", "{row}");
    let a2a = row["metrics"]["alltoall_s"].as_f64().unwrap();
    assert!(
        (a2a * 1e6 / (128.0 * one_us) - 1.0).abs() < 1e-9,
        "{a2a} {one_us} {row}"
    );

    // --ep-load wins over the router: 1 is the balanced mean.
    let (r, json) = project(&fit, &tmp.path().join("b"), &["--ep-load", "1"]);
    assert!(!r.stderr.contains("load from the fit's"), "{}", r.stderr);
    assert!(json["request"].get("ep_router").is_none());
    let balanced = json["rows"][0]["metrics"]["alltoall_s"].as_f64().unwrap();
    let one_us = 7.0 * 15.0 + 7.0 / 8.0 * (s_kb / load) * 0.004;
    assert!((balanced * 1e6 / (128.0 * one_us) - 1.0).abs() < 1e-9);
    assert!(balanced < a2a);
}
