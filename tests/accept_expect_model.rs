//! `collbench accept --expect` with a model: the fit of a real host run, made into the fit of a
//! system 100 times faster (every point fails: small ones as `latency-high`, large ones as
//! `bandwidth-low`) and 100 times slower (every point passes), and a bundled network profile
//! of a GPU cluster (an expected time at every point, saying where it extrapolates).

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::accept::accept;
use common::recorded::Recorded;

/// One real sweep: AllReduce on 2 host ranks, 1 KiB to 1 MiB.
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
            "1M",
            "--iters",
            "10",
            "--warmup",
            "2",
        ],
        common::accept::LIMIT,
    )
}

/// Multiplies every alpha and beta of a fit (and so every time it predicts) by `factor`.
fn scale(v: &mut serde_json::Value, factor: f64) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match k.as_str() {
                    "alpha_us" | "beta_ns_per_byte" => times(&mut x["value"], factor),
                    "bandwidth_gbps" => times(x, 1.0 / factor),
                    _ => scale(x, factor),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| scale(x, factor)),
        _ => {}
    }
}

fn times(x: &mut serde_json::Value, factor: f64) {
    let v = x.as_f64().unwrap();
    *x = serde_json::json!(v * factor);
}

/// `collbench fit` of the recorded run, scaled by `factor`, as `dir/name.json`.
fn scaled_fit(dir: &Path, name: &str, factor: f64) -> PathBuf {
    let fit = dir.join("fit.json");
    if !fit.exists() {
        let r = common::run_cmd(
            "fit",
            &[recorded().to_str().unwrap(), "-o", fit.to_str().unwrap()],
            common::accept::LIMIT,
        );
        assert_eq!(r.code(), 0, "{r:?}");
    }
    let mut v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&fit).unwrap()).unwrap();
    scale(&mut v, factor);
    let out = dir.join(format!("{name}.json"));
    fs::write(&out, v.to_string()).unwrap();
    out
}

fn verdict(r: &common::Run) -> serde_json::Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"))
}

/// (bytes, check key, reason) of every model criterion.
fn judged(v: &serde_json::Value) -> Vec<(u64, String, String)> {
    (v["criteria"].as_array().unwrap().iter())
        .filter(|c| c["name"] != "expect-correct")
        .map(|c| {
            let p = &c["points"][0];
            let chk = &p["checks"][0];
            let reason = chk["reason"].as_str().unwrap_or("pass").to_string();
            (
                p["bytes"].as_u64().unwrap(),
                chk["check"].as_str().unwrap().to_string(),
                reason,
            )
        })
        .collect()
}

#[test]
fn a_fit_of_a_faster_system_fails_small_points_on_time_and_large_ones_on_busbw() {
    let tmp = tempfile::tempdir().unwrap();
    let run = recorded().to_str().unwrap();
    let fast = scaled_fit(tmp.path(), "fast", 0.01);
    let r = accept(&["--expect", fast.to_str().unwrap(), "--run", run, "--json"]);
    assert_eq!(r.code(), 1, "{r:?}");
    let v = verdict(&r);
    let points = judged(&v);
    assert_eq!(points.len(), 11, "1 KiB to 1 MiB: {v}");
    // 1 KiB is all latency; at 1 MiB the bandwidth term is hundreds of times the latency's.
    assert_eq!(
        points[0],
        (1024, "max_time_us".into(), "latency-high".into())
    );
    assert_eq!(
        points[10],
        (1 << 20, "min_busbw_gbps".into(), "bandwidth-low".into())
    );
    for (bytes, check, reason) in &points {
        let want = if check == "max_time_us" {
            "latency-high"
        } else {
            "bandwidth-low"
        };
        assert_eq!(reason, want, "{bytes}: {v}");
    }
    let name = v["criteria"][1]["name"].as_str().unwrap();
    assert_eq!(name, "expect-fast allreduce ring f32 w2 1 KiB", "{v}");
    assert!(r.stderr.contains("expect fast: "), "{}", r.stderr);

    let slow = scaled_fit(tmp.path(), "slow", 100.0);
    let r = accept(&["--expect", slow.to_str().unwrap(), "--run", run, "--json"]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(judged(&verdict(&r)).iter().all(|p| p.2 == "pass"));
}

#[test]
fn a_bundled_network_profile_expects_a_time_everywhere_and_says_it_extrapolates() {
    let run = recorded().to_str().unwrap();
    let r = accept(&["--expect", "h100-ib400", "--run", run, "--json"]);
    let v = verdict(&r);
    assert_eq!(judged(&v).len(), 11, "{v}");
    let notes: Vec<&str> = (v["notes"].as_array().unwrap().iter())
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("expect h100-ib400: 11 points lie outside")),
        "world 2 is below the profile's 8 to 2048: {notes:?}"
    );
    let r = accept(&["--expect", "h100-ib9000", "--run", run]);
    common::accept::refused(&r, &["h100-ib9000", "h100-ib400"]);
    let r = accept(&["--expect", "/nonexistent/fit.json", "--run", run]);
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("/nonexistent/fit.json"), "{}", r.stderr);
}
