//! `--export inductor`: the two bandwidths of PyTorch Inductor's collective cost model,
//! `torch._inductor.config.intra_node_bw` and `inter_node_bw` (GB/s), as a Python snippet.
//!
//! Inductor's `estimate_nccl_collective_runtime` (torch/_inductor/comm_analysis.py, e.g.
//! pytorch/pytorch at 01caf79e) models a ring with the LL protocol: `bw` is `intra_node_bw` on
//! one node and `inter_node_bw` across nodes, `busBw = min(llMaxBw, 2·bw·f)` with `f = 1/4`
//! across nodes or for AllReduce and `1/3` for one-node AllGather and ReduceScatter, and the
//! transfer takes `S / 2^30 / (algBw / 10^9)` ns: bytes counted in GiB against decimal GB/s. For
//! its busBw to be the fitted one, B, a value of `2·B·10^9/2^30` is written (its one-node
//! AllGather and ReduceScatter then come out at 4/3 of B, Inductor's own refinement). Within a
//! node B is `1/beta` of the ring (or of the two-level model's `beta_intra`); across nodes it is
//! the two-level model's busbw of large messages at the target world, where both levels take
//! their share: `(N−1)/N / ((r−1)/r·beta_intra + (n−1)/(n·r)·beta_inter)`, r ranks on each of n
//! nodes. Inductor caps busBw at its `llMaxBws` table (87.7 GB/s on one Ampere or Hopper node,
//! 22.5 on two nodes, 19.0 on more): faster links than that change nothing there.

use super::{allreduce_first, describe, num, provenance, ExportFormat, ExportOptions, Network};
use crate::error::{Error, Result};
use crate::fit::forms::Form;
use crate::fit::schema::FitFile;

/// Inductor counts the tensor in GiB (`/ 1024 / 1024 / 1024`) against GB/s of 10^9 B.
pub const GIB: f64 = 1_073_741_824.0;

/// The config value under which Inductor's ring predicts a busbw of `busbw_gbps`.
pub fn inductor_bw(busbw_gbps: f64) -> f64 {
    2.0 * busbw_gbps * 1e9 / GIB
}

/// The Python text.
pub fn render(fit: &FitFile, opts: &ExportOptions) -> Result<String> {
    // AllReduce first: Inductor's one-node relation (f = 1/4) is the AllReduce one.
    let net = allreduce_first(fit, opts, ExportFormat::Inductor)?;
    let (intra, inter) = busbws(&net)?;
    let mut out = vec![
        "# PyTorch Inductor collective cost model (torch/_inductor/comm_analysis.py)".to_string(),
        format!("# {}.", provenance(fit)),
        format!("# From the {}.", describe(net.model)),
        format!(
            "# Size: {} ranks on {} node(s), from {}. See docs/EXPORTS.md.",
            net.npus, net.nodes, net.size_from
        ),
        "import torch._inductor.config as inductor_config".to_string(),
    ];
    let mut set = |key: &str, busbw: Option<f64>, what: &str| match busbw {
        Some(b) => out.push(format!(
            "inductor_config.{key} = {}  # {what}: busbw {} GB/s, written 2 x busbw x 10^9/2^30",
            num(inductor_bw(b)),
            num(b)
        )),
        None => out.push(format!(
            "# {key}: the fit has no model of {what}; left as it is"
        )),
    };
    set("intra_node_bw", intra, "ranks within a node");
    set("inter_node_bw", inter, "ranks across nodes");
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
}

/// (within a node, across nodes) busbw of large messages, GB/s; `None` where the model says
/// nothing of that level.
pub(super) fn busbws(net: &Network) -> Result<(Option<f64>, Option<f64>)> {
    let beta = |what: &str| net.levels.iter().find(|l| l.what == what);
    if let Some(l) = net.levels.iter().find(|l| l.beta_ns_per_byte <= 0.0) {
        return Err(Error::usage(format!(
            "--export: the {} model has {} = {} (no bandwidth term); a bandwidth > 0 is needed",
            net.op, l.beta_name, l.beta_ns_per_byte
        )));
    }
    if net.form != Form::TwoLevel {
        return Ok((beta("ranks").map(|l| 1.0 / l.beta_ns_per_byte), None));
    }
    let intra = super::param(net.model, "beta_intra_ns_per_byte")?;
    let inter = super::param(net.model, "beta_inter_ns_per_byte")?;
    let within = beta("within a node").map(|_| 1.0 / intra);
    let (big_n, n) = (net.npus as f64, net.nodes as f64);
    let r = big_n / n;
    let across = (net.nodes > 1)
        .then(|| (big_n - 1.0) / big_n / ((r - 1.0) / r * intra + (n - 1.0) / (n * r) * inter));
    Ok((within, across))
}

#[cfg(test)]
mod tests {
    use super::super::testfit::*;
    use super::super::{export, ExportFormat, ExportOptions};
    use super::*;

    /// The value each `inductor_config.KEY = VALUE` line sets.
    fn value(text: &str, key: &str) -> Option<f64> {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("inductor_config.{key} = ")))?;
        line.split('=')
            .nth(1)?
            .split('#')
            .next()?
            .trim()
            .parse()
            .ok()
    }

    #[test]
    fn a_one_node_ring_sets_the_intra_node_value_from_allreduce() {
        let text = export(
            &ring_fit(),
            ExportFormat::Inductor,
            &ExportOptions::default(),
        )
        .unwrap();
        // AllReduce beta 0.2 ns/B: 5 GB/s busbw, written 2 x 5 x 10^9/2^30.
        assert_eq!(value(&text, "intra_node_bw"), Some(9.31323));
        assert_eq!(value(&text, "inter_node_bw"), None);
        assert!(
            text.contains("# inter_node_bw: the fit has no model"),
            "{text}"
        );
        assert!(text.contains("import torch._inductor.config as inductor_config"));
    }

    #[test]
    fn two_levels_give_both_values_and_inductor_predicts_the_fitted_busbw() {
        let text = export(
            &two_level_fit(),
            ExportFormat::Inductor,
            &ExportOptions::default(),
        )
        .unwrap();
        // AllReduce within a node: 1/0.025 = 40 GB/s.
        let intra = value(&text, "intra_node_bw").unwrap();
        assert!((intra - inductor_bw(40.0)).abs() < 1e-4 * intra, "{text}");
        // 32 ranks on 4 nodes (r = 8): 31/32 / (7/8·0.025 + 3/32·0.5).
        let want = 31.0 / 32.0 / (7.0 / 8.0 * 0.025 + 3.0 / 32.0 * 0.5);
        let inter = value(&text, "inter_node_bw").unwrap();
        assert!((inter - inductor_bw(want)).abs() < 1e-4 * inter, "{text}");
        // Inductor across nodes: busBw = 2·bw/4, transfer S/2^30 / (algBw/10^9) ns; for a
        // large AllReduce of S over N ranks that is the fitted time S·2(N−1)/N / busbw.
        let (s, n) = (1e12_f64, 32.0);
        let bus = 2.0 * inter / 4.0;
        let alg = bus * n / (2.0 * (n - 1.0));
        let inductor_ns = s / GIB / (alg / 1e9);
        let fitted_ns = s * 2.0 * (n - 1.0) / n / want;
        assert!(
            (inductor_ns / fitted_ns - 1.0).abs() < 1e-4,
            "{inductor_ns} {fitted_ns}"
        );
    }

    #[test]
    fn without_a_ring_model_it_says_what_is_missing() {
        let e = export(
            &tree_only_fit(),
            ExportFormat::Inductor,
            &ExportOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("inductor"), "{e}");
    }
}
