//! Tests of the exporters through [`export`]: formats, targets and their errors.
use super::testfit::*;
use super::*;

#[test]
fn names_parse_back_and_unknown_lists_the_known() {
    for &f in ExportFormat::ALL {
        assert_eq!(f.name().parse::<ExportFormat>().unwrap(), f);
    }
    let e = "nope".parse::<ExportFormat>().unwrap_err().to_string();
    assert_eq!(
        e,
        "unknown export format 'nope'; valid values: astra-sim, calculon, nccl-tuner, inductor, simai"
    );
}

#[test]
fn numbers_keep_six_significant_digits() {
    assert_eq!(num(5000.0), "5000");
    assert_eq!(num(0.1), "0.1");
    assert_eq!(num(10.0 * 1e9 / 1073741824.0), "9.31323");
    assert_eq!(num(3.5e-5), "0.000035");
    assert_eq!(num(1234567.0), "1234567");
    assert_eq!(num(0.0), "0");
    assert_eq!(round6(2.0 * 0.2 / 0.1), 4.0);
}

#[test]
fn network_prefers_allgather_and_sizes_from_the_largest_world() {
    let f = ring_fit();
    let n = network(&f, &ExportOptions::default(), ExportFormat::AstraSim).unwrap();
    assert_eq!((n.op, n.npus, n.nodes), (Op::AllGather, 8, 1));
    assert_eq!(n.levels.len(), 1);
    assert_eq!(
        (n.levels[0].alpha_us, n.levels[0].beta_ns_per_byte),
        (5.0, 0.1)
    );
    let opts = ExportOptions {
        op: Some(Op::AllReduce),
        npus: Some(64),
        nodes: None,
    };
    let n = network(&f, &opts, ExportFormat::AstraSim).unwrap();
    assert_eq!((n.op, n.npus, n.levels[0].npus), (Op::AllReduce, 64, 64));
}

#[test]
fn two_level_keeps_ranks_per_node_when_scaling_out() {
    let f = two_level_fit();
    let n = network(&f, &ExportOptions::default(), ExportFormat::AstraSim).unwrap();
    assert_eq!((n.npus, n.nodes), (32, 4));
    let npus: Vec<usize> = n.levels.iter().map(|l| l.npus).collect();
    assert_eq!(npus, [8, 4]);
    let opts = ExportOptions {
        nodes: Some(128),
        ..Default::default()
    };
    let n = network(&f, &opts, ExportFormat::AstraSim).unwrap();
    assert_eq!((n.npus, n.nodes), (1024, 128));
    // One node: only the level within it is left.
    let opts = ExportOptions {
        nodes: Some(1),
        ..Default::default()
    };
    let n = network(&f, &opts, ExportFormat::AstraSim).unwrap();
    assert_eq!(n.levels.len(), 1);
    assert_eq!(n.levels[0].what, "within a node");
    let bad = ExportOptions {
        npus: Some(12),
        ..Default::default()
    };
    let e = network(&f, &bad, ExportFormat::AstraSim).unwrap_err();
    assert!(e.to_string().contains("--npus 12"), "{e}");
}

#[test]
fn descriptions_name_the_worlds_fitted() {
    let f = ring_fit();
    assert_eq!(
        describe(&f.models[0]),
        "ring model of allgather f32 (host), fitted on 2, 4, 8 ranks"
    );
    let f = two_level_fit();
    assert_eq!(
        describe(&f.models[0]),
        "two-level model of allgather f32 (host), fitted on ranks/nodes 8/1, 16/2, 32/4"
    );
}

#[test]
fn a_fit_without_the_model_says_which_is_missing() {
    let e = network(
        &tree_only_fit(),
        &Default::default(),
        ExportFormat::Calculon,
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "--export calculon: the fit has no ring or two-level model of allgather or \
         reducescatter or allreduce; it has allreduce tree (tree)"
    );
    assert_eq!(e.lines().count(), 1);
}
