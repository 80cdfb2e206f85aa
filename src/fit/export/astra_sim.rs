//! `--export astra-sim`: the network config YAML of ASTRA-sim 2.0's analytical network backend.
//!
//! The file (github.com/astra-sim/astra-sim, e.g. `examples/network/analytical/Ring_4npus.yml`)
//! has four lists with one entry per dimension, dimension 0 the innermost (NPU ids vary fastest
//! along it):
//!
//! ```yaml
//! topology: [ Ring ]       # Ring, FullyConnected or Switch
//! npus_count: [ 4 ]        # NPUs in the dimension, each > 1
//! bandwidth: [ 50.0 ]      # GB/s per link and direction
//! latency: [ 500.0 ]       # ns per link (hop)
//! ```
//!
//! Keys and checks: `NetworkParser::parse_network_config_yml` and `check_validity` in
//! github.com/astra-sim/astra-network-analytical `common/network-parser/NetworkParser.cc`
//! (vendored as `extern/network_backend/analytical` in astra-sim). A send over `h` hops takes
//! `h·latency + size/bandwidth` (`congestion_unaware/basic-topology/BasicTopology.cc`), and a
//! ring step is one hop to a neighbour, so a ring AllGather over N NPUs takes
//! `(N−1)·latency + (N−1)/N·S/bandwidth`: our ring form with latency = alpha (per step, in ns) and
//! bandwidth = 1/beta. Two-level fits become two Ring dimensions, within a node then between
//! nodes, which is the hierarchical schedule of the two-level form.
//!
//! Units: the backend turns "GB/s" into bytes per ns with `bw · 2^30 / 10^9`
//! (`bw_GBps_to_Bpns` in `common/NetworkFunction.cc`), i.e. it reads 1 GB as 2^30 bytes. We
//! write the value that makes the simulated link move 1/beta × 10^9 bytes per second (our GB/s
//! are decimal), and give the decimal figure in a comment.

use super::{describe, network, num, provenance, ExportFormat, ExportOptions};
use crate::error::{Error, Result};
use crate::fit::schema::FitFile;

/// ASTRA-sim's "GB" in bytes (`bw_GBps_to_Bpns`: 1 GB is 2^30 B).
pub const ASTRA_GB: f64 = 1_073_741_824.0;

/// The value to write in `bandwidth` for a link of `gbps` decimal GB/s.
pub fn astra_bandwidth(gbps: f64) -> f64 {
    gbps * 1e9 / ASTRA_GB
}

/// The YAML text.
pub fn render(fit: &FitFile, opts: &ExportOptions) -> Result<String> {
    let net = network(fit, opts, ExportFormat::AstraSim)?;
    if net.levels.is_empty() {
        return Err(Error::usage(format!(
            "--export astra-sim: {} rank(s) on {} node(s) leave no dimension with 2 or more \
             NPUs (ASTRA-sim needs npus_count > 1); give a larger --npus",
            net.npus, net.nodes
        )));
    }
    if let Some(l) = net.levels.iter().find(|l| l.beta_ns_per_byte <= 0.0) {
        // "ranks" is the one level of a single-level model: nothing to add then.
        let level = match l.what {
            "ranks" => String::new(),
            what => format!(" {what}"),
        };
        return Err(Error::usage(format!(
            "--export astra-sim: the {} model has {} = {}{level} (no bandwidth term); ASTRA-sim \
             needs a bandwidth > 0",
            net.op, l.beta_name, l.beta_ns_per_byte
        )));
    }
    let mut out = vec![
        "# ASTRA-sim 2.0 analytical network config (congestion_unaware/congestion_aware backends)"
            .to_string(),
        format!("# {}.", provenance(fit)),
        format!("# From the {}.", describe(net.model)),
        format!(
            "# Size: {} NPUs on {} node(s), from {}.",
            net.npus, net.nodes, net.size_from
        ),
    ];
    for (d, l) in net.levels.iter().enumerate() {
        let gbps = 1.0 / l.beta_ns_per_byte;
        out.push(format!(
            "# dim {d} ({}, {} NPUs): latency = {} {} us per ring step = {} ns; bandwidth = 1 / \
             {} {} ns/B = {} GB/s (10^9 B/s),",
            l.what,
            l.npus,
            l.alpha_name,
            num(l.alpha_us),
            num(l.alpha_us.max(0.0) * 1e3),
            l.beta_name,
            num(l.beta_ns_per_byte),
            num(gbps)
        ));
        out.push(format!(
            "#   written as {} because ASTRA-sim counts 1 GB as 2^30 B (bw_GBps_to_Bpns).",
            num(astra_bandwidth(gbps))
        ));
        if l.alpha_us < 0.0 {
            out.push(format!(
                "#   {} is negative ({}); latency written as 0.",
                l.alpha_name,
                num(l.alpha_us)
            ));
        }
    }
    out.push(
        "# Keys: astra-sim/astra-network-analytical common/network-parser/NetworkParser.cc; \
         see docs/EXPORTS.md."
            .to_string(),
    );
    out.push(
        "# For ASTRA-sim to follow the fitted times, use ring collective implementations \
         (one per dimension)"
            .to_string(),
    );
    out.push("# and endpoint-delay 0 in the system config: alpha already holds them.".to_string());
    let list = |f: &dyn Fn(&super::Level) -> String| {
        net.levels.iter().map(f).collect::<Vec<_>>().join(", ")
    };
    out.push(format!("topology: [ {} ]", list(&|_| "Ring".to_string())));
    out.push(format!(
        "npus_count: [ {} ]  # {}",
        list(&|l| l.npus.to_string()),
        list(&|l| l.what.to_string())
    ));
    out.push(format!(
        "bandwidth: [ {} ]  # GB/s, ASTRA-sim's (2^30 B/s)",
        list(&|l| num(astra_bandwidth(1.0 / l.beta_ns_per_byte)))
    ));
    out.push(format!(
        "latency: [ {} ]  # ns",
        list(&|l| num(l.alpha_us.max(0.0) * 1e3))
    ));
    let mut text = out.join("\n");
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::super::testfit::*;
    use super::super::{export, ExportFormat, ExportOptions};
    use super::*;
    use crate::collective::Op;

    /// The four lists of the file, as a minimal YAML reader sees them (comments dropped).
    fn lists(text: &str) -> Vec<(String, Vec<String>)> {
        text.lines()
            .map(|l| l.split('#').next().unwrap().trim())
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once(':').expect("key: value");
                let v = v.trim();
                assert!(v.starts_with('[') && v.ends_with(']'), "flow list: {l}");
                let items = v[1..v.len() - 1]
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .collect();
                (k.trim().to_string(), items)
            })
            .collect()
    }

    fn nums(items: &[String]) -> Vec<f64> {
        items.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[test]
    fn ring_fit_gives_one_ring_dimension_with_latency_in_ns_and_bandwidth_in_astra_gb() {
        let text = export(
            &ring_fit(),
            ExportFormat::AstraSim,
            &ExportOptions::default(),
        )
        .unwrap();
        let l = lists(&text);
        let keys: Vec<&str> = l.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["topology", "npus_count", "bandwidth", "latency"]);
        assert_eq!(l[0].1, ["Ring"]);
        assert_eq!(nums(&l[1].1), [8.0]);
        // AllGather: beta 0.1 ns/B is 10 GB/s (10^9 B/s) = 9.31323 of ASTRA-sim's 2^30 B/s.
        let bw = nums(&l[2].1)[0];
        assert!((bw * ASTRA_GB / 1e9 - 10.0).abs() < 1e-4, "{bw}");
        assert_eq!(nums(&l[3].1), [5000.0]);
        assert!(text.contains("= 10 GB/s (10^9 B/s)"), "{text}");
        assert!(text.contains("allgather"), "{text}");
    }

    #[test]
    fn op_and_npus_flags_pick_the_model_and_the_size() {
        let opts = ExportOptions {
            op: Some(Op::AllReduce),
            npus: Some(64),
            nodes: None,
        };
        let l = lists(&export(&ring_fit(), ExportFormat::AstraSim, &opts).unwrap());
        assert_eq!(nums(&l[1].1), [64.0]);
        assert!((nums(&l[2].1)[0] - astra_bandwidth(5.0)).abs() < 1e-4);
        assert_eq!(nums(&l[3].1), [7000.0]);
    }

    #[test]
    fn two_level_fit_gives_intra_then_inter_node_dimensions() {
        let text = export(
            &two_level_fit(),
            ExportFormat::AstraSim,
            &Default::default(),
        )
        .unwrap();
        let l = lists(&text);
        assert_eq!(l[0].1, ["Ring", "Ring"]);
        assert_eq!(nums(&l[1].1), [8.0, 4.0]);
        let bw = nums(&l[2].1);
        assert!((bw[0] - astra_bandwidth(50.0)).abs() < 1e-3, "{bw:?}");
        assert!((bw[1] - astra_bandwidth(2.5)).abs() < 1e-4, "{bw:?}");
        assert_eq!(nums(&l[3].1), [2000.0, 10000.0]);
        let opts = ExportOptions {
            nodes: Some(16),
            ..Default::default()
        };
        let l = lists(&export(&two_level_fit(), ExportFormat::AstraSim, &opts).unwrap());
        assert_eq!(nums(&l[1].1), [8.0, 16.0]);
    }

    #[test]
    fn missing_model_and_degenerate_sizes_are_one_line_errors() {
        let e = export(
            &tree_only_fit(),
            ExportFormat::AstraSim,
            &Default::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--export astra-sim: the fit has no ring or two-level model"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
        let one = ExportOptions {
            npus: Some(1),
            ..Default::default()
        };
        let e = export(&ring_fit(), ExportFormat::AstraSim, &one).unwrap_err();
        assert!(e.to_string().contains("npus_count > 1"), "{e}");
    }
}
