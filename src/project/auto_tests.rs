//! AllReduce `auto` over the bundled H100 profile's ring, tree and NVLS models, by hand from
//! the constants its notes cite.

use super::comm::Network;
use super::layout::Group;
use super::specs::profile;
use crate::collective::{Algo, Op};
use crate::fit::schema::FitFile;

const TREE_BETA: f64 = 1.0 / (0.5 * 0.92 * 360.0);

fn us(fit: &FitFile, ranks: usize, nodes: usize, bytes: f64) -> (f64, Vec<String>) {
    let net = Network::new(fit);
    let t = net
        .time_s(Op::AllReduce, Group { ranks, nodes }, bytes)
        .unwrap();
    (t * 1e6, net.notes())
}

fn without(algo: Algo) -> FitFile {
    let mut fit = profile("h100-ib400").unwrap();
    fit.models.retain(|m| m.algo != algo);
    fit
}

fn ring_us(ranks: usize, nodes: usize, bytes: f64) -> f64 {
    let (r, n, kb) = ((ranks / nodes) as f64, nodes as f64, bytes / 1e3);
    2.0 * ((r - 1.0) * 3.4 + (r - 1.0) / r * kb / 360.0 + (n - 1.0) * 37.8)
        + 2.0 * (n - 1.0) / n * kb / r / 45.0
}

#[test]
fn tree_beats_ring_across_many_nodes_at_mid_sizes() {
    // 2048 ranks on 256 nodes, 1 MB: tree 2·7·4.0 + 2·8·14.0 + 1000·beta µs; ring pays
    // 2·255 network steps of 37.8 µs.
    let tree = 2.0 * 7.0 * 4.0 + 2.0 * 8.0 * 14.0 + 1e3 * TREE_BETA;
    let (t, notes) = us(&without(Algo::Nvls), 2048, 256, 1e6);
    assert!((t - tree).abs() < 1e-9, "{t} vs {tree}");
    assert!(ring_us(2048, 256, 1e6) > 10.0 * tree);
    assert!(notes
        .iter()
        .any(|n| n.contains("2048 ranks on 256") && n.contains("tree at")));
    // NVLSTree pays 2·8 network steps of 20.9 µs: tree still wins there.
    let nvls = 25.0 + 2.0 * 8.0 * 20.9 + 2.0 * 2047.0 / 2048.0 * 1e3 / 360.0;
    let (all, _) = us(&profile("h100-ib400").unwrap(), 2048, 256, 1e6);
    assert!((all - tree).abs() < 1e-9 && nvls > tree, "{all} {nvls}");
}

#[test]
fn ring_beats_tree_within_one_node_at_the_largest_sizes() {
    // 8 ranks, 1 GB: ring 2·7·3.4 + 1.75·1e6/360 µs, tree 2·7·4.0 + 1e6·beta.
    let ring = ring_us(8, 1, 1e9);
    let (t, notes) = us(&without(Algo::Nvls), 8, 1, 1e9);
    assert!((t - ring).abs() < 1e-6, "{t} vs {ring}");
    assert!(56.0 + 1e6 * TREE_BETA > ring);
    assert!(notes
        .iter()
        .any(|n| n.contains("8 ranks on 1") && n.contains("ring at")));
    // NVLS on one node has the ring's bandwidth (busBw 360 GB/s) and 25 µs of latency.
    let (all, _) = us(&profile("h100-ib400").unwrap(), 8, 1, 1e9);
    assert!((all - (25.0 + 1.75e6 / 360.0)).abs() < 1e-6, "{all}");
}

#[test]
fn nvls_needs_two_ranks_per_node() {
    // One rank on each of 64 nodes (an HSDP replica group): ring or tree, never NVLS.
    let (with, notes) = us(&profile("h100-ib400").unwrap(), 64, 64, 1e8);
    let (no_nvls, _) = us(&without(Algo::Nvls), 64, 64, 1e8);
    assert_eq!(with, no_nvls);
    assert!(!notes.iter().any(|n| n.contains("nvls")), "{notes:?}");
}

#[test]
fn a_fit_with_ring_only_projects_as_before() {
    let mut fit = profile("h100-ib400").unwrap();
    fit.models.retain(|m| m.algo == Algo::Ring);
    for (ranks, nodes, bytes) in [(8, 1, 1e9), (2048, 256, 1e6), (16, 2, 3e7)] {
        let (t, notes) = us(&fit, ranks, nodes, bytes);
        let want = ring_us(ranks, nodes, bytes);
        assert!((t - want).abs() < 1e-6 * want, "{t} vs {want}");
        assert!(notes.is_empty(), "{notes:?}");
    }
}
