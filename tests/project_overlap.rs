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
    // Each collective at its own size: Llama-2 7B's layers gather about 400 MB, past the
    // largest size measured, so they take its slowdowns (σ 40%, x1.3), not the medians.
    assert!(
        r.stderr
            .contains("interpolated between 64 KiB (σ 30%) and 16 MiB (σ 40%)"),
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

/// The H100 profile plus the slowdowns of AllGather and ReduceScatter in 8 groups of one rank
/// per node at once (`sweep --split %8` at 64 ranks): x2 at every size.
fn fit_with_groups_at_once(dir: &Path) -> PathBuf {
    let mut v = common::h100_profile();
    let point = |bytes: u64| {
        json!({"bytes": bytes, "slowdown_median": 2.0, "slowdown_max": 2.5,
               "aggregate_busbw_gbps": 100.0, "groups": 8})
    };
    let curve = |op: &str| {
        json!({"backend": "nccl", "op": op, "algo": "ring", "dtype": "bf16", "redop": "sum",
               "world": 8, "in_place": false, "concurrent": "split %8 of 64",
               "points": [point(1 << 20), point(1 << 26)]})
    };
    v["slowdowns"] = json!([curve("allgather"), curve("reducescatter")]);
    let path = dir.join("fit.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

#[test]
fn dp_groups_at_once_slow_the_layouts_with_tensor_parallelism() {
    let tmp = tempfile::tempdir().unwrap();
    let fit = fit_with_groups_at_once(tmp.path());
    let tps = ["--tp", "1,8"];
    let (r, slowed) = project(&fit, &tmp.path().join("s"), &tps);
    assert!(
        r.stderr
            .contains("ReduceScatters x2.000 in layouts with tp > 1")
            && r.stderr.contains("(split %8 of 64; medians over 4 sizes"),
        "{}",
        r.stderr
    );
    assert_eq!(
        opt(&slowed, "dp_at_once"),
        &json!({"gather": 2.0, "reduce": 2.0})
    );
    let profile =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/profiles/h100-ib400.json");
    let (r, alone) = project(&profile, &tmp.path().join("a"), &tps);
    assert!(!r.stderr.contains("tp > 1"), "{}", r.stderr);
    assert_eq!(
        opt(&alone, "dp_at_once"),
        &json!({"gather": 1.0, "reduce": 1.0})
    );
    let comm = |j: &Value, i: usize| {
        let m = &j["rows"][i]["metrics"];
        m["exposed_comm_s"].as_f64().unwrap() + m["overlapped_comm_s"].as_f64().unwrap()
    };
    let tp = |j: &Value, i: usize| j["rows"][i]["tp"].as_u64().unwrap();
    assert_eq!((tp(&slowed, 0), tp(&slowed, 1)), (1, 8));
    // tp 1: one DP group, nothing beside it; tp 8: eight at once, their collectives slower.
    assert_eq!(comm(&slowed, 0), comm(&alone, 0));
    assert!(comm(&slowed, 1) > comm(&alone, 1), "{slowed}\n{alone}");
}

/// The median of `v`, as `fit` and `project` take it.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn tp_allreduces_measured_beside_dp_collectives_run_beside_them_in_the_projection() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    // A real host run of a TP-like AllReduce in pairs of neighbours beside a DP-like
    // ReduceScatter over every other rank, fitted.
    let run = tmp.path().join("run");
    #[rustfmt::skip]
    let args = ["--ranks", "4", "--concurrent", "allreduce@/2,reducescatter@%2", "-b", "64K",
        "-e", "1M", "-f", "4", "-n", "20"];
    common::sweep_ok(&args, &run, std::time::Duration::from_secs(120));
    let fitted = tmp.path().join("fitted.json");
    common::fit_ok(&run, &fitted, std::time::Duration::from_secs(120));
    let slowdowns = common::read_json(&fitted)["slowdowns"].clone();
    let label = "allreduce@/2 + reducescatter@%2 of 4";
    let curves = slowdowns.as_array().unwrap();
    assert!(
        curves.iter().all(|c| c["concurrent"] == label),
        "{slowdowns}"
    );
    let of = |op: &str| -> Vec<f64> {
        (curves.iter().filter(|c| c["op"] == op))
            .flat_map(|c| c["points"].as_array().unwrap().iter())
            .map(|p| p["slowdown_median"].as_f64().unwrap())
            .collect()
    };
    let (ar, rs) = (of("allreduce"), of("reducescatter"));
    assert_eq!((ar.len(), rs.len()), (3, 3), "{slowdowns}");
    // Those slowdowns on the H100 profile: a projection of TP 1 and TP 8.
    let mut v = common::h100_profile();
    v["slowdowns"] = slowdowns;
    let fit = tmp.path().join("fit.json");
    std::fs::write(&fit, serde_json::to_string(&v).unwrap()).unwrap();
    let tps = ["--tp", "1,8"];
    let (r, beside) = project(&fit, &tmp.path().join("b"), &tps);
    assert!(
        r.stderr
            .contains("FSDP communication left after a unit's compute runs beside its TP")
            && r.stderr
                .contains(&format!("({label}; medians over 6 slowdowns")),
        "{}",
        r.stderr
    );
    let got = opt(&beside, "tp_beside_dp");
    let want = median(ar).max(1.0);
    assert!(
        (got["allreduce"].as_f64().unwrap() - want).abs() < 1e-12,
        "{got}"
    );
    // The ReduceScatter stands in for the AllGather the run did not measure.
    assert_eq!(got["gather"], got["reduce"]);
    let profile =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/profiles/h100-ib400.json");
    let (r, apart) = project(&profile, &tmp.path().join("a"), &tps);
    assert!(!r.stderr.contains("TP AllReduces"), "{}", r.stderr);
    assert_eq!(opt(&apart, "tp_beside_dp"), &Value::Null);
    // TP 1 has no AllReduce to run beside: the same step.
    let step = |j: &Value, i: usize| j["rows"][i]["metrics"]["step_time_s"].as_f64().unwrap();
    assert_eq!(step(&beside, 0), step(&apart, 0));
}
