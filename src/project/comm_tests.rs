//! Collective times by hand from the bundled profiles and hand-made SendRecv and AllToAll
//! models.

use super::*;
use crate::project::specs::profile;

/// Adds to `fit` a single-level model of `op` and `algo` in `form` with `alpha_us` and
/// `beta_ns_per_byte`, fitted on `worlds` and `nodes` (hand-made fits for tests).
pub(crate) fn add_model(
    fit: &mut FitFile,
    (op, algo, form): (Op, Algo, Form),
    worlds: &[usize],
    nodes: &[usize],
    alpha_us: f64,
    beta_ns_per_byte: f64,
) {
    use crate::fit::schema::{NamedParam, Param};
    let mut m = fit.models[0].clone();
    let param = |name: &str, value: f64| NamedParam {
        name: name.into(),
        param: Param {
            value,
            stderr: 0.0,
            ci: [value, value],
        },
    };
    m.op = op;
    m.algo = algo;
    m.form = form.name().into();
    m.formula = form.formula(op);
    m.params = vec![
        param("alpha_us", alpha_us),
        param("beta_ns_per_byte", beta_ns_per_byte),
    ];
    m.covariance = vec![vec![0.0; 2]; 2];
    m.worlds = worlds.to_vec();
    m.nodes = nodes.to_vec();
    fit.models.push(m);
}

/// The H100 profile with SendRecv direct models within a node (10 µs + 0.005 ns/B) and
/// across nodes (20 µs + 0.025 ns/B), and a pairwise AllToAll model within a node (15 µs,
/// 0.004 ns/B).
fn p2p_fit() -> FitFile {
    let mut fit = profile("h100-ib400").unwrap();
    let sr = (Op::SendRecv, Algo::Direct, Form::Direct);
    add_model(&mut fit, sr, &[2, 4], &[1, 1], 10.0, 0.005);
    add_model(&mut fit, sr, &[2, 4], &[2, 2], 20.0, 0.025);
    let a2a = (Op::AllToAll, Algo::Pairwise, Form::Pairwise);
    add_model(&mut fit, a2a, &[4, 8], &[1, 1], 15.0, 0.004);
    fit
}

#[test]
fn pipeline_transfers_use_the_fits_sendrecv_model() {
    let fit = p2p_fit();
    let net = Network::new(&fit);
    // alpha + S·beta with S = B (µs per kB = ns per B): 10 + 1000·0.005 = 15 µs within a
    // node, 20 + 1000·0.025 = 45 µs between two.
    let intra = Group { ranks: 2, nodes: 1 };
    let inter = Group { ranks: 2, nodes: 2 };
    let t = net.pp_transfer_s(intra, 1e6).unwrap();
    assert_eq!(net.p2p_model(intra), P2pModel::SendRecv);
    assert!((t * 1e6 - 15.0).abs() < 1e-9, "{}", t * 1e6);
    let t = net.pp_transfer_s(inter, 1e6).unwrap();
    assert_eq!(net.p2p_model(inter).name(), "sendrecv");
    assert!((t * 1e6 - 45.0).abs() < 1e-9, "{}", t * 1e6);
    let notes = net.notes();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("between nodes use the fit's SendRecv model")),
        "{notes:?}"
    );
    // Without a SendRecv model: the AllGather pair, exactly as before, with a note.
    let plain = profile("h100-ib400").unwrap();
    let net = Network::new(&plain);
    let t = net.pp_transfer_s(inter, 1e6).unwrap();
    assert_eq!(net.p2p_model(inter), P2pModel::AllGatherPair);
    assert_eq!(t, net.p2p_s(inter, 1e6).unwrap());
    assert!((t * 1e6 - (37.8 + 1000.0 / 45.0)).abs() < 1e-9);
    assert!(
        net.notes().iter().any(|n| n.contains("no SendRecv model")),
        "{:?}",
        net.notes()
    );
}

#[test]
fn alltoall_uses_the_fits_model_or_composes_pairwise_steps() {
    let fit = p2p_fit();
    let net = Network::new(&fit);
    // 8 ranks in a node, S = 1 MB: 7·15 + 7/8·1000·0.004 = 108.5 µs.
    let node = Group { ranks: 8, nodes: 1 };
    let t = net.alltoall_s(node, 1e6).unwrap();
    assert_eq!(net.alltoall_model(node), Some(AllToAllModel::AllToAll));
    assert!((t * 1e6 - 108.5).abs() < 1e-9, "{}", t * 1e6);
    // One rank: nothing to exchange, no model.
    let one = Group { ranks: 1, nodes: 1 };
    assert_eq!(net.alltoall_s(one, 1e6).unwrap(), 0.0);
    assert_eq!(net.alltoall_model(one), None);
    // The profile has no AllToAll model: 16 ranks on 2 nodes, S = 1.6 MB, blocks of 100 kB:
    // 7 steps inside the node (3.4 + 100/360 µs each, the AllGather pair) and 8 to the
    // other node (37.8 + 100/45 µs each).
    let plain = profile("h100-ib400").unwrap();
    let net = Network::new(&plain);
    let two = Group {
        ranks: 16,
        nodes: 2,
    };
    let t = net.alltoall_s(two, 1.6e6).unwrap();
    let want = 7.0 * (3.4 + 100.0 / 360.0) + 8.0 * (37.8 + 100.0 / 45.0);
    assert_eq!(
        net.alltoall_model(two).map(|m| m.name()),
        Some("pairwise-allgather-pair")
    );
    assert!((t * 1e6 - want).abs() < 1e-9, "{} vs {want}", t * 1e6);
    // Inside one node that is exactly the pairwise form with the ring's alpha and beta.
    let t = net.alltoall_s(node, 1e6).unwrap();
    assert!((t * 1e6 - (7.0 * 3.4 + 7.0 / 8.0 * 1000.0 / 360.0)).abs() < 1e-9);
    // The AllToAll's note says how its steps were timed; the pipeline's note, which no
    // pipeline transfer asked for, is not there.
    let notes = net.notes();
    assert!(
        notes.iter().any(|n| n.contains("no AllToAll model")
            && n.contains("each timed by the AllGather model at p = 2")),
        "{notes:?}"
    );
    assert!(
        !notes
            .iter()
            .any(|n| n.contains("point-to-point transfer of B bytes")),
        "{notes:?}"
    );
    // With SendRecv but no AllToAll model, the steps are SendRecv transfers.
    let mut sr_only = p2p_fit();
    sr_only.models.retain(|m| m.op != Op::AllToAll);
    let net = Network::new(&sr_only);
    let t = net.alltoall_s(node, 1e6).unwrap();
    assert_eq!(
        net.alltoall_model(node).map(|m| m.name()),
        Some("pairwise-sendrecv")
    );
    assert!((t * 1e6 - 7.0 * (10.0 + 125.0 * 0.005)).abs() < 1e-9);
}

#[test]
fn two_level_profile_evaluates_by_hand() {
    let fit = profile("h100-ib400").unwrap();
    let net = Network::new(&fit);
    // 32 ranks on 4 nodes, 1 MB AllGather: 7·3.4 + 7/8·1000·(1/360) µs intra,
    // 3·37.8 + 3/4·1000/8·(1/45) µs inter.
    let t = net
        .time_s(
            Op::AllGather,
            Group {
                ranks: 32,
                nodes: 4,
            },
            1e6,
        )
        .unwrap();
    let want = 7.0 * 3.4 + 875.0 / 360.0 + 3.0 * 37.8 + 93.75 / 45.0;
    assert!((t * 1e6 - want).abs() < 1e-9, "{} vs {want}", t * 1e6);
    // Within a node the inter-node terms vanish; a group of one costs nothing.
    let intra = net
        .time_s(Op::AllReduce, Group { ranks: 2, nodes: 1 }, 1e6)
        .unwrap();
    assert!((intra * 1e6 - 2.0 * (3.4 + 500.0 / 360.0)).abs() < 1e-9);
    assert_eq!(
        net.time_s(Op::AllGather, Group { ranks: 1, nodes: 1 }, 1e6)
            .unwrap(),
        0.0
    );
    // Point to point between nodes: one inter-node step plus B bytes at the NIC's cost.
    let p2p = net.p2p_s(Group { ranks: 2, nodes: 2 }, 1e6).unwrap();
    assert!((p2p * 1e6 - (37.8 + 1000.0 / 45.0)).abs() < 1e-9);
    // The only note: AllReduce over 2 ranks compared ring, tree and NVLS; ring won.
    let notes = net.notes();
    assert!(
        notes.len() == 1 && notes[0].contains("ring at 976.56 KiB"),
        "{notes:?}"
    );
}

#[test]
fn a_missing_model_names_op_algo_and_level() {
    let mut fit = profile("h100-ib400").unwrap();
    fit.models.retain(|m| m.op != Op::ReduceScatter);
    let net = Network::new(&fit);
    let e = net
        .time_s(
            Op::ReduceScatter,
            Group {
                ranks: 16,
                nodes: 2,
            },
            1e6,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("(reducescatter, ring, inter-node)"), "{e}");
}

#[test]
fn single_level_models_stand_in_with_a_note() {
    let mut fit = profile("h100-ib400").unwrap();
    for m in &mut fit.models {
        m.form = "ring".into();
        m.params.truncate(2);
        m.nodes = vec![1];
    }
    let net = Network::new(&fit);
    let t = net
        .time_s(
            Op::AllGather,
            Group {
                ranks: 16,
                nodes: 2,
            },
            1e6,
        )
        .unwrap();
    assert!((t * 1e6 - (15.0 * 3.4 + 15.0 / 16.0 * 1000.0 / 360.0)).abs() < 1e-9);
    assert!(
        net.notes()[0].contains("no model fitted across nodes"),
        "{:?}",
        net.notes()
    );
}
