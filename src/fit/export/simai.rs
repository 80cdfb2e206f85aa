//! `--export simai`: the flags of SimAI-Analytical's automatic busbw (`bin/SimAI_analytical
//! -nv NV -nic NIC -n_p_s K -g N -g_p_s R`), for a workload simulated on the measured network.
//!
//! SimAI's `calculateBusBw` (aliyun/SimAI, astra-sim-alibabacloud/astra-sim/system/calbusbw.cc)
//! takes a ring's busbw as `nv` on one node and as `min(nv, nic·n_p_s)` across nodes (GB/s, its
//! `all_gather_bus_bw`, returned for ring AllReduce, AllGather and ReduceScatter); its tree and
//! NVLS values derive from the same two numbers. So `-nv` is the fitted ring busbw within a
//! node and `-nic` the busbw across nodes at the target world (as `--export inductor` computes
//! them) over `-n_p_s` NICs per server, one per GPU by default (`-g_p_s`, the ranks on each
//! node). SimAI's documentation (docs/configuration/build-options.md) says its `-busbw
//! busbw.yaml` form is not parsed by the open-source binary, so no busbw.yaml is written.

use super::inductor::busbws;
use super::{allreduce_first, describe, num, provenance, ExportFormat, ExportOptions};
use crate::error::{Error, Result};
use crate::fit::schema::FitFile;

/// The text: comments, then one line of flags.
pub fn render(fit: &FitFile, opts: &ExportOptions) -> Result<String> {
    let net = allreduce_first(fit, opts, ExportFormat::SimAi)?;
    let (within, across) = busbws(&net)?;
    let per_node = (net.npus / net.nodes.max(1)).max(1);
    let nv = within.or(across).ok_or_else(|| {
        Error::usage("--export simai: the model describes no level with more than one rank")
    })?;
    // One node: SimAI never uses the NIC term; the NVLink value stands in for it.
    let server = across.unwrap_or(nv);
    let nic = server / per_node as f64;
    let mut out = vec![
        "# SimAI-Analytical automatic busbw (aliyun/SimAI calbusbw.cc): ring busbw nv on one"
            .to_string(),
        "# node, min(nv, nic x n_p_s) across nodes. Pass after -w WORKLOAD and before -r.".into(),
        format!("# {}.", provenance(fit)),
        format!("# From the {}.", describe(net.model)),
        format!(
            "# Size: {} ranks on {} node(s), from {}; one NIC per GPU (n_p_s = g_p_s). See \
             docs/EXPORTS.md.",
            net.npus, net.nodes, net.size_from
        ),
    ];
    if across.is_none() {
        out.push("# The fit has no model across nodes: nic x n_p_s is set to nv.".into());
    }
    out.push(format!(
        "-g {} -g_p_s {per_node} -nv {} -nic {} -n_p_s {per_node}",
        net.npus,
        num(nv),
        num(nic)
    ));
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::super::testfit::*;
    use super::super::{export, ExportFormat, ExportOptions};

    /// The value after `flag` on the flags line.
    fn flag(text: &str, flag: &str) -> f64 {
        let line = text.lines().find(|l| l.starts_with("-g ")).unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        let i = words.iter().position(|w| *w == flag).unwrap();
        words[i + 1].parse().unwrap()
    }

    /// SimAI's ring busbw for the flags: nv on one node, min(nv, nic·n_p_s) across nodes.
    fn simai_ring_busbw(text: &str, nodes: usize) -> f64 {
        let nv = flag(text, "-nv");
        match nodes {
            1 => nv,
            _ => nv.min(flag(text, "-nic") * flag(text, "-n_p_s")),
        }
    }

    #[test]
    fn two_levels_give_simai_the_fitted_busbw_on_one_node_and_across_nodes() {
        let text = export(
            &two_level_fit(),
            ExportFormat::SimAi,
            &ExportOptions::default(),
        )
        .unwrap();
        // Within a node 1/0.025 = 40 GB/s; 32 ranks on 4 nodes: 31/32 / (7/8·0.025 + 3/32·0.5).
        let across = 31.0 / 32.0 / (7.0 / 8.0 * 0.025 + 3.0 / 32.0 * 0.5);
        assert!(
            (simai_ring_busbw(&text, 1) / 40.0 - 1.0).abs() < 1e-4,
            "{text}"
        );
        assert!(
            (simai_ring_busbw(&text, 4) / across - 1.0).abs() < 1e-4,
            "{text}"
        );
        assert_eq!((flag(&text, "-g"), flag(&text, "-g_p_s")), (32.0, 8.0));
        assert_eq!(flag(&text, "-n_p_s"), 8.0);
    }

    #[test]
    fn one_node_sets_nv_and_says_the_nic_stands_in() {
        let text = export(&ring_fit(), ExportFormat::SimAi, &ExportOptions::default()).unwrap();
        // AllReduce beta 0.2 ns/B: 5 GB/s.
        assert_eq!(flag(&text, "-nv"), 5.0);
        assert!(text.contains("no model across nodes"), "{text}");
        let e = export(
            &tree_only_fit(),
            ExportFormat::SimAi,
            &ExportOptions::default(),
        );
        assert!(e.is_err());
    }
}
