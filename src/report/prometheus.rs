//! A sweep's points as Prometheus metrics (text exposition format 0.0.4), for a node
//! exporter's textfile collector or any scraper: one gauge sample per point and metric, named and
//! labelled in the style of NCCL Inspector's Prometheus output (`nccl_bus_bandwidth_gbs`,
//! `nccl_collective_exec_time_microseconds`, labels `node`, `n_nodes`, `nranks`,
//! `collective`, `message_size`, `algo_proto`; NCCL plugins/profiler/inspector/README.md), with
//! collbench's prefix and exact sizes where Inspector buckets them. docs/FORMATS.md, "Metrics".

use std::fmt::Write as _;

use crate::model::record::PointRecord;

/// One metric family: name, help text, and the point's value (none: no sample).
struct Family {
    name: &'static str,
    help: &'static str,
    value: fn(&PointRecord) -> Option<f64>,
}

const FAMILIES: [Family; 5] = [
    Family {
        name: "collbench_bus_bandwidth_gbs",
        help: "Bus bandwidth of the point's median time, GB/s (nccl-tests' busbw).",
        value: |r| Some(r.busbw_gbps),
    },
    Family {
        name: "collbench_collective_exec_time_microseconds",
        help: "Median time of one call over the timed iterations, microseconds.",
        value: |r| Some(r.time_us_median),
    },
    Family {
        name: "collbench_loop_exec_time_microseconds",
        help: "nccl-tests' time of one call: its back-to-back loop's, microseconds.",
        value: |r| r.loop_time_us,
    },
    Family {
        name: "collbench_time_cv",
        help: "Coefficient of variation of the timed iterations.",
        value: |r| Some(r.time_cv),
    },
    Family {
        name: "collbench_wrong_elements",
        help: "Elements of the checked call's outputs that differ from the exact result.",
        value: |r| Some(r.wrong as f64),
    },
];

/// The document for `points` of a run on `node` (the host that led it).
pub fn render(points: &[PointRecord], node: &str) -> String {
    let mut out = String::new();
    for f in &FAMILIES {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} gauge", f.name);
        for r in points {
            if let Some(v) = (f.value)(r) {
                let _ = writeln!(out, "{}{{{}}} {}", f.name, labels(r, node), number(v));
            }
        }
    }
    out
}

/// A sample's value: Prometheus spells the special floats `NaN`, `+Inf`, `-Inf`.
fn number(v: f64) -> String {
    match v {
        v if v.is_nan() => "NaN".into(),
        v if v == f64::INFINITY => "+Inf".into(),
        v if v == f64::NEG_INFINITY => "-Inf".into(),
        v => format!("{v}"),
    }
}

/// The labels of a point, values escaped as the format asks.
fn labels(r: &PointRecord, node: &str) -> String {
    let k = &r.key;
    let algo_proto = match k.proto {
        Some(p) => format!("{}_{}", k.algo, p),
        None => k.algo.to_string(),
    };
    let mut pairs = vec![
        ("backend", k.backend.clone()),
        ("node", node.to_string()),
        ("n_nodes", k.nodes.to_string()),
        ("nranks", k.world.to_string()),
        ("collective", k.op.title().to_string()),
        ("message_size", k.bytes.to_string()),
        ("algo_proto", algo_proto),
        ("dtype", k.dtype.to_string()),
        ("redop", k.redop.to_string()),
        ("in_place", k.in_place.to_string()),
    ];
    if let Some(root) = k.root {
        pairs.push(("root", root.to_string()));
    }
    let comm = k.comm.label();
    if !comm.trim().is_empty() {
        pairs.push(("comm", comm.trim().to_string()));
    }
    // What tells apart points that share every label above: one series each.
    let tells_apart = [
        ("traffic", &k.traffic),
        ("group", &k.group),
        ("concurrent", &k.concurrent),
    ];
    for (name, value) in tells_apart {
        if let Some(v) = value {
            pairs.push((name, v.clone()));
        }
    }
    let parts: Vec<String> = pairs
        .into_iter()
        .map(|(name, value)| format!("{name}=\"{}\"", escape(&value)))
        .collect();
    parts.join(",")
}

/// A label value as the text format writes it: backslash, double quote and newline escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{Op, Proto};

    #[test]
    fn every_point_is_a_sample_of_every_family_with_its_labels() {
        let mut r = PointRecord::example(Op::AllReduce, 1 << 20, 8).with_proto(Some(Proto::Ll128));
        r.key.nodes = 2;
        r.loop_time_us = None;
        let text = render(&[r.clone()], "node\"a\\b");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# HELP collbench_bus_bandwidth_gbs Bus bandwidth of the point's median time, GB/s (nccl-tests' busbw).");
        assert_eq!(lines[1], "# TYPE collbench_bus_bandwidth_gbs gauge");
        let want = format!(
            "collbench_bus_bandwidth_gbs{{backend=\"host\",node=\"node\\\"a\\\\b\",n_nodes=\"2\",\
             nranks=\"8\",collective=\"AllReduce\",message_size=\"1048576\",algo_proto=\"ring_ll128\",\
             dtype=\"f32\",redop=\"sum\",in_place=\"false\"}} {}",
            r.busbw_gbps
        );
        assert_eq!(lines[2], want);
        // No loop time: the family has its HELP and TYPE and no sample.
        let loop_lines = text
            .lines()
            .filter(|l| l.contains("collbench_loop_exec"))
            .count();
        assert_eq!(loop_lines, 2);
        assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), 4);
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "+Inf");
    }
}
