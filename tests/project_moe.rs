//! `collbench project` with pipeline transfers timed by a SendRecv model and mixture-of-experts
//! layouts (`--ep`) timed by an AllToAll model, run as a user would: from a fit holding those
//! models (the H100 profile with hand-made SendRecv and AllToAll models, whose numbers the test
//! works out by hand), and from a fit of a real host sweep of sendrecv and alltoall.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{csv_rows, serial, sweep_ok};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(300);

/// A single-level model of the profile's shape: `op`, `algo`, `form`, `alpha_us` and
/// `beta_ns_per_byte`, fitted on `worlds` and `nodes`.
fn model(template: &Value, op: &str, algo: &str, form: &str, at: (&[usize], &[usize])) -> Value {
    let mut m = template.clone();
    m["op"] = json!(op);
    m["algo"] = json!(algo);
    m["form"] = json!(form);
    m["formula"] = json!(if form == "direct" {
        "alpha + S·beta"
    } else {
        "(p-1)·alpha + (p-1)/p·S·beta"
    });
    m["covariance"] = json!([[0.0, 0.0], [0.0, 0.0]]);
    m["worlds"] = json!(at.0);
    m["nodes"] = json!(at.1);
    m
}

fn params(m: &mut Value, alpha_us: f64, beta_ns_per_byte: f64) {
    let p = |name: &str, v: f64| json!({"name": name, "value": v, "stderr": 0.0, "ci": [v, v]});
    m["params"] = json!([
        p("alpha_us", alpha_us),
        p("beta_ns_per_byte", beta_ns_per_byte)
    ]);
}

/// The H100 profile plus SendRecv `direct` models within a node (10 µs, 0.005 ns/B) and across
/// nodes (20 µs, 0.025 ns/B), and a `pairwise` AllToAll model within a node (15 µs,
/// 0.004 ns/B), written to `dir/fit.json`.
fn hand_made_fit(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/profiles/h100-ib400.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    let template = v["models"][0].clone();
    let added = [
        ("sendrecv", "direct", "direct", [2, 4], [1, 1], 10.0, 0.005),
        ("sendrecv", "direct", "direct", [2, 4], [2, 2], 20.0, 0.025),
        (
            "alltoall",
            "pairwise",
            "pairwise",
            [4, 8],
            [1, 1],
            15.0,
            0.004,
        ),
    ];
    for (op, algo, form, worlds, nodes, alpha, beta) in added {
        let mut m = model(&template, op, algo, form, (&worlds, &nodes));
        params(&mut m, alpha, beta);
        v["models"].as_array_mut().unwrap().push(m);
    }
    let path = dir.join("fit.json");
    std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
    path
}

fn project(args: &[&str]) -> common::Run {
    common::run_cmd("project", args, LIMIT)
}

#[test]
fn mixtral_expert_parallel_rows_use_the_fits_alltoall_and_sendrecv_models() {
    let tmp = tempfile::tempdir().unwrap();
    let fit = hand_made_fit(tmp.path());
    let out = tmp.path().join("proj");
    let r = project(&[
        "--fit",
        fit.to_str().unwrap(),
        "--hardware",
        "h100",
        "--model",
        "mixtral-8x7b",
        "--seq-len",
        "4096",
        "--world-sizes",
        "32",
        "--ep",
        "1,8",
        "--pp",
        "1,2",
        "--reshard",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    // The table names the model's experts and adds the ep and a2a columns.
    assert!(
        r.stdout
            .contains("mixtral-8x7b (MoE, 8 experts, top-2) on h100"),
        "{}",
        r.stdout
    );
    let header = r.stdout.lines().nth(1).unwrap();
    for title in [" pp  ep ", " a2a "] {
        assert!(header.contains(title), "{header}");
    }
    assert!(
        r.stderr
            .contains("between nodes use the fit's SendRecv model"),
        "{}",
        r.stderr
    );
    let json = common::read_json(&out.join("projection.json"));
    assert_eq!(json["request"]["eps"], json!([1, 8]));
    assert_eq!(json["request"]["model"]["experts"], 8);
    assert_eq!(json["request"]["model"]["top_k"], 2);
    assert_eq!(json["model_derived"]["total_params"], 46_702_792_704u64);
    assert_eq!(json["model_derived"]["active_params"], 12_879_925_248u64);
    let rows = json["rows"].as_array().unwrap();
    let layouts: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| (r["pp"].as_u64().unwrap(), r["ep"].as_u64().unwrap()))
        .collect();
    assert_eq!(layouts, vec![(1, 1), (1, 8), (2, 1), (2, 8)]);
    // Per AllToAll: S = 4096 tokens · top-2 · 4096 · 2 bytes per rank over the 8 ranks of a
    // node, the fit's pairwise model 7·15 + 7/8·S·0.004 µs (S in kB); 4 per layer and
    // microbatch: 32 layers × 1 microbatch at pp 1, 16 layers × 2 microbatches at pp 2.
    let s_kb = 4096.0 * 2.0 * 4096.0 * 2.0 / 1e3;
    let one_us = 7.0 * 15.0 + 7.0 / 8.0 * s_kb * 0.004;
    // A pipeline transfer between the stages (on different nodes): 20 + 2·4096·4096/1e3·0.025.
    for r in rows {
        let (pp, ep) = (r["pp"].as_u64().unwrap(), r["ep"].as_u64().unwrap());
        assert_eq!(r["fits_memory"], true, "{r}");
        let want_p2p = if pp > 1 {
            json!("sendrecv")
        } else {
            json!(null)
        };
        assert_eq!(r["pp_p2p_model"], want_p2p, "{r}");
        let want_a2a = if ep > 1 {
            json!("alltoall")
        } else {
            json!(null)
        };
        assert_eq!(r["alltoall_model"], want_a2a, "{r}");
        let a2a = r["metrics"]["alltoall_s"].as_f64().unwrap();
        if ep > 1 {
            assert!((a2a * 1e6 / (128.0 * one_us) - 1.0).abs() < 1e-12, "{r}");
            assert!(a2a < r["metrics"]["exposed_comm_s"].as_f64().unwrap());
        } else {
            assert_eq!(a2a, 0.0);
        }
    }
    // The layouts' summaries are keyed by ep too.
    let eps: Vec<u64> = json["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["ep"].as_u64().unwrap())
        .collect();
    assert_eq!(eps, vec![1, 8, 1, 8]);
    // projection.csv carries the same fields.
    let csv = csv_rows(&out.join("projection.csv"));
    assert_eq!(csv.len(), 4);
    for (c, j) in csv.iter().zip(rows) {
        assert_eq!(c["ep"], j["ep"].to_string());
        assert_eq!(c["pp_p2p_model"], j["pp_p2p_model"].as_str().unwrap_or(""));
        assert_eq!(
            c["alltoall_model"],
            j["alltoall_model"].as_str().unwrap_or("")
        );
        let a2a: f64 = c["alltoall_s"].parse().unwrap();
        assert_eq!(a2a, j["metrics"]["alltoall_s"].as_f64().unwrap());
    }

    // The same without the SendRecv and AllToAll models: the fallbacks, each with a note.
    let plain = tmp.path().join("plain");
    let r = project(&[
        "--profile",
        "h100-ib400",
        "--model",
        "mixtral-8x7b",
        "--seq-len",
        "4096",
        "--world-sizes",
        "32",
        "--ep",
        "8",
        "--pp",
        "2",
        "--reshard",
        "--out",
        plain.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    for note in ["no SendRecv model", "no AllToAll model"] {
        assert!(r.stderr.contains(note), "{note}: {}", r.stderr);
    }
    let json = common::read_json(&plain.join("projection.json"));
    let row = &json["rows"][0];
    assert_eq!(row["pp_p2p_model"], "allgather-pair");
    assert_eq!(row["alltoall_model"], "pairwise-allgather-pair");
    // 7 pairwise steps of S/8 at the profile's NVLink pair, 3.4 µs + 1/360 ns/B.
    let fallback_us = 7.0 * (3.4 + s_kb / 8.0 / 360.0);
    let a2a = row["metrics"]["alltoall_s"].as_f64().unwrap();
    assert!(
        (a2a * 1e6 / (128.0 * fallback_us) - 1.0).abs() < 1e-12,
        "{row}"
    );
}

#[test]
fn bad_expert_parallel_degrees_are_one_line_and_exit_2() {
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["--model", "mixtral-8x7b", "--ep", "3"],
            &["--ep 3", "8 experts", "1, 2, 4, 8"],
        ),
        (
            &["--model", "llama2-7b", "--ep", "1,8"],
            &["--ep 8", "dense model", "--ep 1"],
        ),
        (
            &["--model", "mixtral-8x7b", "--ep", "8", "--hybrid"],
            &["--ep 8 with --hybrid"],
        ),
        (
            &[
                "--model",
                "mixtral-8x7b",
                "--ep",
                "8",
                "--world-sizes",
                "8",
                "--tp",
                "2",
            ],
            &["world 8", "ep 8 does not divide dp 4"],
        ),
    ];
    for (extra, names) in cases {
        let mut args = vec!["--profile", "h100-ib400", "--seq-len", "4096"];
        args.extend_from_slice(extra);
        let r = project(&args);
        assert_eq!(r.code(), 2, "{args:?}: {r:?}");
        let lines = r.stderr_lines();
        assert_eq!(lines.len(), 1, "{args:?}: {}", r.stderr);
        for n in names {
            assert!(lines[0].contains(n), "{args:?}: '{}' lacks {n}", lines[0]);
        }
        assert_eq!(r.stdout, "", "{args:?}");
    }
}

/// A tiny MoE model (4 layers, width 128, 4 experts, top-2) for host-sized projections.
const TINY_MOE: &str = "name = \"tiny-moe\"\nlayers = 4\nhidden = 128\nffn = 344\nheads = 4\n\
kv_heads = 4\nvocab = 16384\nseq_len = 256\nexperts = 4\ntop_k = 2\n";

#[test]
fn a_real_host_sweep_of_sendrecv_and_alltoall_times_pipeline_and_expert_layouts() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    sweep_ok(
        &[
            "--op",
            "sendrecv,alltoall,allgather,reducescatter",
            "--dtype",
            "bf16",
            "--ranks",
            "4",
            "--world-sizes",
            "2,4",
            "-b",
            "64K",
            "-e",
            "1M",
            "--iters",
            "20",
            "--warmup",
            "3",
        ],
        &run_dir,
        LIMIT,
    );
    let fit = tmp.path().join("fit.json");
    common::fit_ok(&run_dir, &fit, LIMIT);
    let f = common::read_json(&fit);
    let has = |op: &str, algo: &str| {
        let curves = f["curves"].as_array().unwrap();
        curves
            .iter()
            .any(|c| c["op"] == op && c["algo"] == algo && c["world"] == 2)
    };
    assert!(
        has("sendrecv", "direct") && has("alltoall", "pairwise"),
        "{f}"
    );
    let model = tmp.path().join("tiny-moe.toml");
    std::fs::write(&model, TINY_MOE).unwrap();
    let hw = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/hardware/host-replay.toml");
    let out = tmp.path().join("proj");
    let r = project(&[
        "--fit",
        fit.to_str().unwrap(),
        "--hardware",
        hw.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--compute-efficiency",
        "0.5",
        "--world-sizes",
        "4",
        "--ep",
        "1,2,4",
        "--pp",
        "1,2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    let json = common::read_json(&out.join("projection.json"));
    let rows = json["rows"].as_array().unwrap();
    // pp 2 leaves dp 2: ep 4 is skipped there, with a note.
    assert_eq!(rows.len(), 5, "{json}");
    assert!(
        r.stderr.contains("ep 4 does not divide dp 2"),
        "{}",
        r.stderr
    );
    for r in rows {
        let (pp, ep) = (r["pp"].as_u64().unwrap(), r["ep"].as_u64().unwrap());
        let want_p2p = if pp > 1 {
            json!("sendrecv")
        } else {
            json!(null)
        };
        assert_eq!(r["pp_p2p_model"], want_p2p, "{r}");
        let want_a2a = if ep > 1 {
            json!("alltoall")
        } else {
            json!(null)
        };
        assert_eq!(r["alltoall_model"], want_a2a, "{r}");
        let a2a = r["metrics"]["alltoall_s"].as_f64().unwrap();
        assert_eq!(a2a > 0.0, ep > 1, "{r}");
    }
    // The curves measured at exactly these group sizes served them.
    for op in ["sendrecv direct", "alltoall pairwise"] {
        assert!(
            r.stderr
                .contains(&format!("{op}: 2 ranks on 1 node(s) were measured")),
            "{op}: {}",
            r.stderr
        );
    }
}
