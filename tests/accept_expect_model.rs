//! `collbench accept --expect` with a model: the fit of a real host run, its every line set to
//! a known alpha and beta (so the model saturates at 9·alpha/beta = 9 KB whatever this machine
//! measured), of a system far faster (every point fails: those below 9 KB as `latency-high`,
//! the rest as `bandwidth-low`) and far slower (every point passes), and a bundled network
//! profile of a GPU cluster (an expected time at every point, saying where it extrapolates).

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

/// Sets every line of a fit to `alpha` µs and `beta` ns/B (estimate and interval alike).
fn set_lines(v: &mut serde_json::Value, alpha: f64, beta: f64) {
    let param = |x: f64| serde_json::json!({"value": x, "stderr": 0.0, "ci": [x, x]});
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match k.as_str() {
                    "alpha_us" => *x = param(alpha),
                    "beta_ns_per_byte" => *x = param(beta),
                    "bandwidth_gbps" => *x = serde_json::json!(1.0 / beta),
                    _ => set_lines(x, alpha, beta),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| set_lines(x, alpha, beta)),
        _ => {}
    }
}

/// `collbench fit` of the recorded run with every line at `alpha`, `beta`, as `dir/name.json`.
fn fit_with(dir: &Path, name: &str, alpha: f64, beta: f64) -> PathBuf {
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
    set_lines(&mut v, alpha, beta);
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
    // 10 ns and 100 GB/s: past what shared memory between two processes does.
    let fast = fit_with(tmp.path(), "fast", 0.01, 0.01);
    let r = accept(&["--expect", fast.to_str().unwrap(), "--run", run, "--json"]);
    assert_eq!(r.code(), 1, "{r:?}");
    let v = verdict(&r);
    let points = judged(&v);
    assert_eq!(points.len(), 11, "1 KiB to 1 MiB: {v}");
    // Saturated (busbw at 90% of its peak) from 9·alpha/beta = 9000 bytes: 16 KiB on.
    for (bytes, check, reason) in &points {
        let (want_check, want_reason) = match *bytes < 9000 {
            true => ("max_time_us", "latency-high"),
            false => ("min_busbw_gbps", "bandwidth-low"),
        };
        assert_eq!(
            (check.as_str(), reason.as_str()),
            (want_check, want_reason),
            "{bytes}: {v}"
        );
    }
    let name = v["criteria"][1]["name"].as_str().unwrap();
    assert_eq!(name, "expect-fast allreduce ring f32 w2 1 KiB", "{v}");
    assert!(r.stderr.contains("expect fast: "), "{}", r.stderr);

    // 1 ms and 1 MB/s: far below it.
    let slow = fit_with(tmp.path(), "slow", 1000.0, 1000.0);
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
