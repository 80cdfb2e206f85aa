//! Results of an NCCL run that measured several protocols (`--proto ll,ll128,simple`), read by
//! `collbench fit`, `compare`, `accept`, `plot` and `report`: each protocol is its own curve,
//! point and line. The folders are written by hand through the sweep's own writer, so no GPU
//! is needed.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use collbench::fit::schema::FitFile;
use common::protorun::{write_proto_run, ProtoLine, PROTO_SIZES};
use common::{run, Run};

const LIMIT: Duration = Duration::from_secs(60);

const LL: ProtoLine = ProtoLine {
    proto: "ll",
    alpha_us: 5.0,
    beta_ns_per_byte: 0.5,
};
const LL128: ProtoLine = ProtoLine {
    proto: "ll128",
    alpha_us: 8.0,
    beta_ns_per_byte: 0.1,
};
const SIMPLE: ProtoLine = ProtoLine {
    proto: "simple",
    alpha_us: 20.0,
    beta_ns_per_byte: 0.05,
};

/// A run of the three protocols at worlds 2 and 4 in `tmp/name`.
fn three_protocols(tmp: &Path, name: &str, lines: &[ProtoLine]) -> PathBuf {
    let dir = tmp.join(name);
    write_proto_run(&dir, lines, &[2, 4]);
    dir
}

fn cb(args: &[&str]) -> Run {
    run(args, LIMIT)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn fit_gives_one_curve_and_model_per_protocol() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = three_protocols(tmp.path(), "run", &[LL, LL128, SIMPLE]);
    let out = tmp.path().join("fit.json");
    let r = cb(&["fit", s(&dir), "-o", s(&out)]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stdout.contains("ring/ll128"), "{}", r.stdout);
    let f = FitFile::read(&out).unwrap();
    assert_eq!(f.curves.len(), 6, "{:#?}", f.notes);
    for c in &f.curves {
        let name = c.key.proto.expect("every curve has its protocol").name();
        let truth = [LL, LL128, SIMPLE]
            .into_iter()
            .find(|l| l.proto == name)
            .unwrap();
        let (a, b) = (c.line.alpha_us.value, c.line.beta_ns_per_byte.value);
        assert!((a / truth.alpha_us - 1.0).abs() < 1e-6, "{name}: alpha {a}");
        assert!(
            (b / truth.beta_ns_per_byte - 1.0).abs() < 1e-6,
            "{name}: beta {b}"
        );
        assert_eq!(c.sizes, PROTO_SIZES.len());
    }
    let protos: Vec<&str> = f.models.iter().map(|m| m.proto.unwrap().name()).collect();
    assert_eq!(protos, ["ll", "ll128", "simple"]);
    let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(json["curves"][0]["proto"], "ll");
    // A prediction for one protocol uses that protocol's model and says so.
    let q = "op=allreduce,world=8,bytes=1M,proto=simple";
    let r = cb(&["fit", s(&out), "--predict", q, "--json"]);
    assert_eq!(r.code(), 0, "{r:?}");
    let p: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(p["proto"], "simple");
    let r = cb(&[
        "fit",
        s(&out),
        "--predict",
        "op=allreduce,world=8,bytes=1M,proto=ll64",
    ]);
    assert_eq!(r.code(), 2, "{r:?}");
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("unknown protocol 'll64'"), "{}", r.stderr);
}

#[test]
fn compare_matches_each_protocol_with_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let a = three_protocols(tmp.path(), "a", &[LL, LL128, SIMPLE]);
    let slow_ll = ProtoLine {
        alpha_us: LL.alpha_us * 1.2,
        beta_ns_per_byte: LL.beta_ns_per_byte * 1.2,
        ..LL
    };
    let auto = ProtoLine {
        proto: "auto",
        ..SIMPLE
    };
    let b = three_protocols(tmp.path(), "b", &[auto, LL128, slow_ll]);
    let r = cb(&["compare", s(&a), s(&b), "--json"]);
    assert_eq!(r.code(), 1, "{r:?}");
    let c: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let points = c["points"].as_array().unwrap();
    let per_world = PROTO_SIZES.len() * 2;
    assert_eq!(points.len(), 2 * per_world, "ll and ll128 at both worlds");
    for p in points {
        let want = if p["proto"] == "ll" {
            "regression"
        } else {
            "same"
        };
        assert_eq!(p["status"], want, "{p}");
        assert!(
            (p["time_ratio"].as_f64().unwrap() - if want == "same" { 1.0 } else { 1.2 }).abs()
                < 1e-9
        );
    }
    assert_eq!(c["regressions"], per_world);
    let only = |side: &str| c[side].as_array().unwrap().clone();
    assert_eq!(only("only_in_a").len(), per_world);
    assert_eq!(only("only_in_a")[0], "allreduce ring/simple f32 w2 1 KiB");
    assert_eq!(only("only_in_b")[0], "allreduce ring/auto f32 w2 1 KiB");
    assert!(c["notes"].as_array().unwrap().is_empty(), "{c}");
    let r = cb(&["compare", s(&a), s(&b)]);
    assert!(
        r.stdout
            .contains("only in A: allreduce ring/simple f32 w2 1 KiB"),
        "{}",
        r.stdout
    );
}

#[test]
fn accept_selects_by_protocol() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = three_protocols(tmp.path(), "run", &[LL, LL128, SIMPLE]);
    let crit = tmp.path().join("c.toml");
    fs::write(
        &crit,
        "[[criterion]]\nname = \"ll128 fast\"\nproto = \"ll128\"\nmin_bytes = \"1M\"\n\
         min_busbw_gbps = 5\n[[criterion]]\nname = \"all\"\nmax_wrong = 0\n",
    )
    .unwrap();
    let r = cb(&["accept", "--criteria", s(&crit), "--run", s(&dir), "--json"]);
    assert_eq!(r.code(), 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let fast = &v["criteria"][0];
    assert_eq!(fast["selector"], "proto ll128, sizes >= 1 MiB");
    let labels: Vec<&str> = fast["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "allreduce ring/ll128 f32 w2 1 MiB",
            "allreduce ring/ll128 f32 w4 1 MiB"
        ]
    );
    assert_eq!(fast["points"][0]["proto"], "ll128");
    assert_eq!(v["criteria"][1]["points"].as_array().unwrap().len(), 36);
    fs::write(&crit, "[[criterion]]\nproto = \"ll64\"\nmax_wrong = 0\n").unwrap();
    let r = cb(&["accept", "--criteria", s(&crit), "--run", s(&dir)]);
    assert_eq!(r.code(), 2, "{r:?}");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(
        lines[0].contains("criterion #1: proto: unknown protocol 'll64'; valid values: ll, ll128"),
        "{}",
        lines[0]
    );
}

#[test]
fn plot_and_report_draw_a_line_per_protocol() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = three_protocols(tmp.path(), "run", &[LL, LL128, SIMPLE]);
    let fit = tmp.path().join("fit.json");
    assert_eq!(cb(&["fit", s(&dir), "-o", s(&fit)]).code(), 0);
    let plots = tmp.path().join("plots");
    let r = cb(&[
        "plot",
        s(&dir),
        "--fit",
        s(&fit),
        "--format",
        "svg",
        "--out",
        s(&plots),
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(!r.stderr.contains("fit has no curve"), "{}", r.stderr);
    let lat = fs::read_to_string(plots.join("latency-allreduce.svg")).unwrap();
    for want in [
        "ring/ll, world 2",
        "ring/ll128, world 2",
        "ring/simple, world 4",
    ] {
        assert!(lat.contains(want), "latency-allreduce.svg lacks '{want}'");
    }
    let world = fs::read_to_string(plots.join("busbw-vs-world-allreduce.svg")).unwrap();
    assert!(world.contains("ring/ll128, 1 KiB"), "by-world legend");
    let html = tmp.path().join("r.html");
    let r = cb(&["report", s(&dir), "--fit", s(&fit), "-o", s(&html)]);
    assert_eq!(r.code(), 0, "{r:?}");
    let page = fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("ll, ll128, simple"),
        "the summary lists the protocols"
    );
    assert!(page.contains("ring/ll128"), "tables name the protocol");
}
