//! `--export calculon`: the `networks` list of a Calculon system JSON
//! (github.com/calculon-ai/calculon, `systems/*.json`), one entry per network tier.
//!
//! `calculon/network.py` (`Network.__init__`, `Network.time`) requires each entry to have
//! exactly the keys `bandwidth` (GB/s, × 10^9), `efficiency` (0 < e <= 1), `size` (processors
//! in the tier), `latency` (seconds), `ops`, `must_be_filled` and `processor_usage`
//! (0 <= u < 1), and `ops` to have exactly `p2p: [scalar, null]` and `reduce_scatter`,
//! `all_gather`, `all_reduce: [scalar, offset]`. The time of an op of `op_size` bytes over
//! `comm_size` processors is
//!
//! ```text
//! latency + scalar · op_size · (1 + offset / comm_size) / (bandwidth · 10^9 · efficiency)
//! ```
//!
//! and Calculon passes the whole buffer as `op_size` (DP: `_dp_net.time('reduce_scatter',
//! block_dp_size, data_par)` in `calculon/llm/llm.py`), which is the nccl-tests S. With
//! offset −1 that is `latency + scalar · (p−1)/p · S / bandwidth`: our ring form with bandwidth
//! = 1/beta of the reference op and efficiency 1. Other ops keep their own fitted beta through
//! `scalar = k · beta_op / beta_ref` (k = 1 for AllGather and ReduceScatter, 2 for AllReduce).
//! Calculon's latency is one number per tier, not per step: we write the ring latency of the
//! reference op over the whole tier, (size − 1) · alpha. `must_be_filled` (tier size must be a
//! multiple of the processors assigned to it, `Llm._check_network_assignments`) is true for the
//! node tier of a two-level fit, as in Calculon's own systems; `processor_usage` (share of the
//! processor a collective takes from compute) is not measured and written as 0.
//!
//! Calculon's `System` reads its keys by name, so the `_comment` key we add is ignored.

use serde_json::{json, Map, Value};

use super::{
    describe, find_model, network, num, param, provenance, round6, ExportFormat, ExportOptions,
    Level,
};
use crate::collective::Op;
use crate::error::{Error, Result};
use crate::fit::forms::Form;
use crate::fit::schema::FitFile;

/// Calculon's collective keys, our ops, and the ring's bytes factor relative to (p−1)/p·S.
const OPS: [(&str, Op, f64); 3] = [
    ("reduce_scatter", Op::ReduceScatter, 1.0),
    ("all_gather", Op::AllGather, 1.0),
    ("all_reduce", Op::AllReduce, 2.0),
];

/// The JSON text: `{"_comment": [...], "networks": [...]}`.
pub fn render(fit: &FitFile, opts: &ExportOptions) -> Result<String> {
    let net = network(fit, opts, ExportFormat::Calculon)?;
    if net.levels.is_empty() {
        return Err(Error::usage(format!(
            "--export calculon: {} rank(s) make no network; give --npus 2 or more",
            net.npus
        )));
    }
    let mut comments = vec![
        format!("Calculon system 'networks' entries, {}.", provenance(fit)),
        format!("Reference: the {}.", describe(net.model)),
        format!(
            "Size: {} processors on {} node(s), from {}.",
            net.npus, net.nodes, net.size_from
        ),
        "bandwidth = 1/beta of the reference op (GB/s, 10^9 B/s), efficiency 1: the fit \
         already measures achieved bandwidth."
            .to_string(),
        "latency = (size - 1) * alpha in seconds: the ring latency over the whole tier \
         (all_reduce's ring has twice the steps)."
            .to_string(),
        "ops [scalar, -1]: scalar = k * beta_op / beta_ref, k = 2 for all_reduce; p2p is not \
         fitted and costs latency + S / bandwidth."
            .to_string(),
        "processor_usage is not measured (0). Keys and meaning: calculon/network.py; see \
         collbench docs/EXPORTS.md."
            .to_string(),
    ];
    let two_tiers = net.levels.len() == 2;
    let mut networks = Vec::new();
    for (i, l) in net.levels.iter().enumerate() {
        if l.beta_ns_per_byte <= 0.0 {
            return Err(Error::usage(format!(
                "--export calculon: the {} model has {} = {} (no bandwidth term); Calculon \
                 needs a bandwidth > 0",
                net.op, l.beta_name, l.beta_ns_per_byte
            )));
        }
        // A tier holds every processor below it: the node tier r, the network tier r·n.
        let size = if two_tiers && i == 1 {
            net.npus
        } else {
            l.npus
        };
        let ops = ops_for(fit, net.form, net.op, l, &mut comments)?;
        let mut entry = Map::new();
        entry.insert("bandwidth".into(), json!(round6(1.0 / l.beta_ns_per_byte)));
        entry.insert("efficiency".into(), json!(1.0));
        entry.insert("size".into(), json!(size));
        entry.insert(
            "latency".into(),
            json!(round6((l.npus - 1) as f64 * l.alpha_us.max(0.0) * 1e-6)),
        );
        entry.insert("ops".into(), Value::Object(ops));
        entry.insert("must_be_filled".into(), json!(two_tiers && i == 0));
        entry.insert("processor_usage".into(), json!(0.0));
        comments.push(format!(
            "tier {i} ({}): {} = {} us per step over {} processors, {} = {} ns/B.",
            l.what,
            l.alpha_name,
            num(l.alpha_us),
            l.npus,
            l.beta_name,
            num(l.beta_ns_per_byte)
        ));
        networks.push(Value::Object(entry));
    }
    let doc = json!({ "_comment": comments, "networks": networks });
    let mut text = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::usage(format!("cannot encode the Calculon networks: {e}")))?;
    text.push('\n');
    Ok(text)
}

/// The `ops` object of one tier: each collective's fitted beta relative to the reference's.
fn ops_for(
    fit: &FitFile,
    form: Form,
    reference: Op,
    l: &Level,
    comments: &mut Vec<String>,
) -> Result<Map<String, Value>> {
    let mut ops = Map::new();
    ops.insert("p2p".into(), json!([1.0, null]));
    for (key, op, k) in OPS {
        let other = if op == reference {
            None
        } else {
            find_model(fit, op, form)
        };
        let beta = match other {
            Some(m) => param(m, l.beta_name)?,
            None => l.beta_ns_per_byte,
        };
        if op != reference && other.is_none() {
            comments.push(format!(
                "{key} ({}): not fitted; assumed the per-byte cost of {reference}.",
                l.what
            ));
        }
        ops.insert(
            key.into(),
            json!([round6(k * beta / l.beta_ns_per_byte), -1]),
        );
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::super::testfit::*;
    use super::super::{export, ExportFormat, ExportOptions};
    use crate::collective::Op;
    use serde_json::Value;

    fn networks(text: &str) -> Vec<Value> {
        let v: Value = serde_json::from_str(text).unwrap();
        v["networks"].as_array().unwrap().clone()
    }

    /// Every key Calculon's Network requires, and nothing else.
    fn check_keys(n: &Value) {
        let mut keys: Vec<&str> = n.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "bandwidth",
                "efficiency",
                "latency",
                "must_be_filled",
                "ops",
                "processor_usage",
                "size"
            ]
        );
        let mut ops: Vec<&str> = n["ops"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        ops.sort();
        assert_eq!(ops, ["all_gather", "all_reduce", "p2p", "reduce_scatter"]);
        assert_eq!(n["ops"]["p2p"], serde_json::json!([1.0, null]));
        let eff = n["efficiency"].as_f64().unwrap();
        assert!(eff > 0.0 && eff <= 1.0);
        let u = n["processor_usage"].as_f64().unwrap();
        assert!((0.0..1.0).contains(&u));
    }

    fn close(a: &Value, b: f64) {
        let a = a.as_f64().unwrap_or(f64::NAN);
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} != {b}");
    }

    #[test]
    fn ring_fit_gives_one_tier_with_relative_op_scalars() {
        let text = export(
            &ring_fit(),
            ExportFormat::Calculon,
            &ExportOptions::default(),
        )
        .unwrap();
        let n = networks(&text);
        assert_eq!(n.len(), 1);
        let t = &n[0];
        check_keys(t);
        // AllGather is the reference: 1 / 0.1 ns/B = 10 GB/s; latency 7 steps × 5 µs.
        close(&t["bandwidth"], 10.0);
        close(&t["latency"], 35e-6);
        assert_eq!(t["size"], 8);
        assert_eq!(t["must_be_filled"], false);
        close(&t["ops"]["all_gather"][0], 1.0);
        close(&t["ops"]["reduce_scatter"][0], 1.25);
        close(&t["ops"]["all_reduce"][0], 4.0);
        for op in ["all_gather", "reduce_scatter", "all_reduce"] {
            assert_eq!(t["ops"][op][1], -1);
        }
        // The model predicts what the fit does: AllReduce at 8 ranks, 1 MB.
        let s = 1e6;
        let calculon = t["latency"].as_f64().unwrap()
            + t["ops"]["all_reduce"][0].as_f64().unwrap() * s * (1.0 - 1.0 / 8.0)
                / (t["bandwidth"].as_f64().unwrap() * 1e9);
        let fit = 2.0 * 7.0 / 8.0 * s * 0.2e-9;
        assert!((calculon - 35e-6 - fit).abs() < 1e-12, "{calculon}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(v["_comment"].as_array().unwrap().len() > 3);
    }

    #[test]
    fn two_level_fit_gives_a_node_tier_and_a_network_tier() {
        let n = networks(
            &export(
                &two_level_fit(),
                ExportFormat::Calculon,
                &Default::default(),
            )
            .unwrap(),
        );
        assert_eq!(n.len(), 2);
        n.iter().for_each(check_keys);
        close(&n[0]["bandwidth"], 50.0);
        close(&n[0]["latency"], 7.0 * 2e-6);
        assert_eq!(
            (n[0]["size"].clone(), n[0]["must_be_filled"].clone()),
            (8.into(), true.into())
        );
        close(&n[0]["ops"]["all_reduce"][0], 2.0 * 0.025 / 0.02);
        close(&n[1]["bandwidth"], 2.5);
        close(&n[1]["latency"], 3.0 * 10e-6);
        assert_eq!(
            (n[1]["size"].clone(), n[1]["must_be_filled"].clone()),
            (32.into(), false.into())
        );
        close(&n[1]["ops"]["all_reduce"][0], 2.0 * 0.5 / 0.4);
        // ReduceScatter was not fitted: same per-byte cost as AllGather.
        close(&n[1]["ops"]["reduce_scatter"][0], 1.0);
    }

    #[test]
    fn reference_op_can_be_chosen_and_missing_model_is_named() {
        let opts = ExportOptions {
            op: Some(Op::AllReduce),
            ..Default::default()
        };
        let n = networks(&export(&ring_fit(), ExportFormat::Calculon, &opts).unwrap());
        close(&n[0]["bandwidth"], 5.0);
        close(&n[0]["ops"]["all_reduce"][0], 2.0);
        close(&n[0]["ops"]["all_gather"][0], 0.5);
        let e = export(
            &tree_only_fit(),
            ExportFormat::Calculon,
            &Default::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--export calculon: the fit has no ring or two-level"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
    }
}
