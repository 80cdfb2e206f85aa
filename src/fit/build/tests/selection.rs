//! `fit` keeps, among the candidate forms of a key, the one that best predicts the largest
//! world from the smaller ones; every candidate carries that error.

use super::*;

/// 8 ranks per node on 1, 2, 4, 8 and 16 nodes.
const NODES_8: [(usize, usize); 5] = [(8, 1), (16, 2), (32, 4), (64, 8), (128, 16)];

fn fitted(op: Op, algo: Algo, form: Form, truth: &[f64]) -> (Vec<WorldModel>, Vec<String>) {
    let c = curves(op, algo, form, truth, &NODES_8, 0.0, 0.0);
    let mut notes = Vec::new();
    let models = fit_models(&c, (&BuildOptions::default(), ""), &mut notes);
    (models, notes)
}

fn selected(models: &[WorldModel]) -> &WorldModel {
    let chosen: Vec<&WorldModel> = models.iter().filter(|m| m.selected).collect();
    assert_eq!(chosen.len(), 1, "{models:#?}");
    chosen[0]
}

#[test]
fn nccl_tree_data_selects_the_tree_form_and_recovers_it() {
    // chain 0.6 µs per hop inside a node, 14 µs per tree level across nodes, 0.05 ns/B.
    let truth = [0.6, 14.0, 0.05];
    let (models, notes) = fitted(Op::AllReduce, Algo::Tree, Form::NcclTree, &truth);
    let m = selected(&models);
    assert_eq!(m.form, "nccl-tree", "{:?} {notes:?}", m.selection);
    assert_close(m, &truth, 1e-9);
    let e = m.extrapolation.as_ref().unwrap();
    assert_eq!((e.world, e.nodes, e.from_world), (128, 16, 64));
    assert!(e.rel_err_max < 1e-9, "{e:?}");
    // Busbw falls with p at small sizes (latency grows with log n): the naive guess misses.
    assert!(e.naive_rel_err_mean.unwrap() > 0.01, "{e:?}");
    let why = m.selection.as_deref().unwrap();
    assert!(
        why.contains("predicting world 128 (16 nodes) from worlds up to 64"),
        "{why}"
    );
    assert!(why.contains("tree ") && why.contains("log-linear"), "{why}");
}

#[test]
fn with_fixed_ranks_per_node_two_level_and_nccl_ring_are_one_family() {
    // p − n = n(r − 1): at fixed r the NCCL ring's intra-node steps are a multiple of the
    // node count, which two-level's inter-node alpha absorbs; the tie goes to two-level.
    let (models, _) = fitted(Op::AllReduce, Algo::Ring, Form::NcclRing, &[0.6, 8.0, 0.02]);
    let m = selected(&models);
    assert_eq!(m.form, "two-level", "{:?}", m.selection);
    assert!(m.extrapolation.as_ref().unwrap().rel_err_max < 1e-9);
    let inter = &m.params[2].param.value;
    assert!((inter - (8.0 + 7.0 * 0.6)).abs() < 1e-9, "{inter}");
}

#[test]
fn every_candidate_carries_its_extrapolation_error() {
    // 4 ranks on each of 2 nodes as well: now the two ring shapes differ.
    let truth = [0.6, 8.0, 0.02];
    let mut worlds = NODES_8.to_vec();
    worlds.insert(1, (8, 2));
    let c = curves(
        Op::AllReduce,
        Algo::Ring,
        Form::NcclRing,
        &truth,
        &worlds,
        0.0,
        0.0,
    );
    let models = fit_models(&c, (&BuildOptions::default(), ""), &mut Vec::new());
    let forms: Vec<&str> = models.iter().map(|m| m.form.as_str()).collect();
    assert_eq!(forms, ["two-level", "nccl-ring", "ring", "log-linear"]);
    assert!(models.iter().all(|m| m.extrapolation.is_some()));
    let m = selected(&models);
    assert!(
        m.extrapolation.as_ref().unwrap().rel_err_mean < 1e-6,
        "{:?}",
        m.selection
    );
    let nccl = models.iter().find(|m| m.form == "nccl-ring").unwrap();
    assert!(nccl.quality.rel_err_max < 1e-9, "{:?}", nccl.quality);
    let err = |f: &str| {
        let m = models.iter().find(|m| m.form == f).unwrap();
        m.extrapolation.as_ref().unwrap().rel_err_mean
    };
    assert!(err("nccl-ring") < 1e-9);
    // The flat ring cannot tell network hops from NVLink ones: it misses the largest world.
    assert!(err("ring") > 0.005, "{}", err("ring"));
    assert!(models
        .iter()
        .filter(|m| !m.selected)
        .all(|m| m.selection.is_none()));
}

#[test]
fn the_primer_law_wins_where_latency_follows_it() {
    // a + b·p + c·log2 p = 20 + 0.05·p + 3·log2 p µs, 0.02 ns per bus byte.
    let truth = [20.0, 0.05, 3.0, 0.02];
    let (models, _) = fitted(Op::AllGather, Algo::Ring, Form::LogLinear, &truth);
    let m = selected(&models);
    assert_eq!(m.form, "log-linear", "{:?}", m.selection);
    assert_close(m, &truth, 1e-6);
}

#[test]
fn too_few_worlds_to_validate_keep_the_algorithms_own_form() {
    let c = curves(
        Op::AllGather,
        Algo::Ring,
        Form::Ring,
        &[3.0, 0.1],
        &[(2, 1), (4, 1)],
        0.0,
        0.0,
    );
    let mut notes = Vec::new();
    let models = fit_models(&c, (&BuildOptions::default(), ""), &mut notes);
    let m = selected(&models);
    assert_eq!(m.form, "ring");
    // Ring is determined by world 2 alone, so it predicts world 4: validated.
    assert_eq!(m.extrapolation.as_ref().unwrap().from_world, 2);
    let ll = models.iter().find(|m| m.form == "log-linear");
    assert!(ll.map_or(true, |m| m.extrapolation.is_none()));
}
