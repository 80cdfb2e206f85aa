//! Every cross-world form recovers the parameters its data were made from: exactly without
//! noise, within 2% with 2% multiplicative noise and 5% planted outliers.

use super::*;
use crate::collective::{Algo, DType, Op, Proto};
use crate::fit::forms::Form;
use std::collections::BTreeMap;

/// xorshift64*: deterministic noise without a dependency.
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// truth × exp(noise · N(0,1)) (Irwin–Hall normal), × 3 with probability `outliers`.
    fn sample(&mut self, truth: f64, noise: f64, outliers: f64) -> f64 {
        let z = (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0;
        let y = truth * (noise * z).exp();
        if self.uniform() < outliers {
            3.0 * y
        } else {
            y
        }
    }
}

/// Synthetic curves of `op` for each (world, nodes), 64 B .. 64 MiB, 40 samples per size.
fn curves(
    op: Op,
    algo: Algo,
    form: Form,
    truth: &[f64],
    worlds: &[(usize, usize)],
    noise: f64,
    outliers: f64,
) -> BTreeMap<CurveKey, Curve> {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut out = BTreeMap::new();
    for &(world, nodes) in worlds {
        let key = CurveKey {
            backend: "host".into(),
            op,
            algo,
            dtype: DType::F32,
            world,
            nodes,
            in_place: false,
            proto: None,
            comm: Default::default(),
            traffic: None,
        };
        let mut curve = Curve::new();
        for i in 0..21 {
            let bytes = 64usize << i;
            let x = form.coefficients(op, world, nodes, bytes as f64).unwrap();
            let t: f64 = x.iter().zip(truth).map(|(c, p)| c * p).sum();
            let samples = (0..40).map(|_| rng.sample(t, noise, outliers)).collect();
            curve.insert(bytes, samples);
        }
        out.insert(key, curve);
    }
    out
}

fn recovered(
    op: Op,
    algo: Algo,
    truth: &[f64],
    worlds: &[(usize, usize)],
    noise: f64,
    outliers: f64,
) -> WorldModel {
    let multi = worlds.iter().any(|w| w.1 > 1);
    // The algorithm's own shape for the op (Bruck: halving-doubling AllGather, bruck AllToAll).
    let form = if multi {
        Form::TwoLevel
    } else {
        Form::candidates(algo, false)
            .into_iter()
            .find(|f| f.covers(op))
            .unwrap()
    };
    let c = curves(op, algo, form, truth, worlds, noise, outliers);
    let mut notes = Vec::new();
    let models = fit_models(&c, (&BuildOptions::default(), ""), &mut notes);
    assert_eq!(models.iter().filter(|m| m.selected).count(), 1, "{notes:?}");
    let m = models.into_iter().find(|m| m.selected).unwrap();
    assert_eq!(m.form, form.name(), "{:?}", m.selection);
    m
}

fn assert_close(m: &WorldModel, truth: &[f64], tol: f64) {
    for (p, t) in m.params.iter().zip(truth) {
        let err = (p.param.value - t).abs() / t;
        assert!(err <= tol, "{} = {} vs {t}: {err:e}", p.name, p.param.value);
        assert!(p.param.ci[0] <= p.param.ci[1]);
    }
}

const SINGLE: [(usize, usize); 4] = [(2, 1), (3, 1), (4, 1), (8, 1)];
/// 8 GPUs per node on 1, 2, 4 and 8 nodes, plus 4 ranks on one node.
const TWO_LEVEL: [(usize, usize); 5] = [(4, 1), (8, 1), (16, 2), (32, 4), (64, 8)];

#[test]
fn single_level_forms_recover_their_parameters() {
    // alpha 3 µs per step, beta 0.1 ns/B (10 GB/s).
    let truth = [3.0, 0.1];
    for (op, algo) in [
        (Op::AllGather, Algo::Ring),
        (Op::ReduceScatter, Algo::Ring),
        (Op::AllReduce, Algo::Ring),
        (Op::AllReduce, Algo::Tree),
        (Op::AllReduce, Algo::RecursiveDoubling),
        (Op::Broadcast, Algo::Tree),
        (Op::AllToAll, Algo::Pairwise),
        (Op::AllToAll, Algo::Bruck),
        (Op::AllToAll, Algo::Linear),
    ] {
        let exact = recovered(op, algo, &truth, &SINGLE, 0.0, 0.0);
        assert_close(&exact, &truth, 1e-9);
        assert!((exact.quality.r2 - 1.0).abs() < 1e-9, "{op} {algo}");
        assert!(exact.holdout.iter().all(|h| h.rel_err_max < 1e-9));
        let noisy = recovered(op, algo, &truth, &SINGLE, 0.02, 0.05);
        assert_close(&noisy, &truth, 0.02);
        assert!(
            noisy.quality.downweighted > 0,
            "{op} {algo}: outliers not down-weighted"
        );
    }
}

/// Bruck AllToAll points made from its form at 2, 3, 5 and 6 ranks (none a power of two but 2):
/// the fit finds alpha and beta exactly, selects the bruck form, and `--predict` evaluates it
/// at any world: 16 ranks, 1 MB = 4 steps of 4 µs + 32 blocks of 62.5 kB at 0.25 ns/B.
#[test]
fn bruck_alltoall_is_fitted_exactly_and_predicted() {
    use crate::fit::predict::{parse_query, predict};
    let truth = [4.0, 0.25];
    let worlds = [(2, 1), (3, 1), (5, 1), (6, 1)];
    let c = curves(
        Op::AllToAll,
        Algo::Bruck,
        Form::Bruck,
        &truth,
        &worlds,
        0.0,
        0.0,
    );
    let mut notes = Vec::new();
    let models = fit_models(&c, (&BuildOptions::default(), ""), &mut notes);
    let forms: Vec<&str> = models.iter().map(|m| m.form.as_str()).collect();
    assert_eq!(forms, ["bruck", "log-linear"], "{notes:?}");
    let m = models.iter().find(|m| m.selected).unwrap();
    assert_eq!(m.form, "bruck", "{:?}", m.selection);
    assert_close(m, &truth, 1e-9);
    assert_eq!(m.worlds, [2, 3, 5, 6]);
    assert!(m.holdout.iter().all(|h| h.rel_err_max < 1e-9));
    let fit = crate::fit::export::testfit::fit(models, vec![]);
    let q = parse_query("op=alltoall,algo=bruck,world=16,bytes=1000000").unwrap();
    let p = predict(&fit, &q).unwrap();
    assert_eq!(p.form, "bruck");
    let want = 4.0 * 4.0 + 32.0 / 16.0 * 1000.0 * 0.25;
    assert!(
        (p.time_us - want).abs() < 1e-6 * want,
        "{} vs {want}",
        p.time_us
    );
    // At a fitted world the answer is the form itself: 6 ranks, 3 steps, 7 blocks of S/6.
    let q = parse_query("op=alltoall,algo=bruck,world=6,bytes=6000").unwrap();
    let p = predict(&fit, &q).unwrap();
    assert!(
        (p.time_us - (3.0 * 4.0 + 7.0 * 0.25)).abs() < 1e-9,
        "{}",
        p.time_us
    );
    assert!(!p.extrapolated);
}

#[test]
fn two_level_form_recovers_intra_and_inter_node_parameters() {
    // NVLink-like intra (1 µs, 0.005 ns/B = 200 GB/s), network-like inter (8 µs, 0.04 ns/B).
    let truth = [1.0, 0.005, 8.0, 0.04];
    for op in [Op::AllGather, Op::ReduceScatter, Op::AllReduce] {
        let exact = recovered(op, Algo::Ring, &truth, &TWO_LEVEL, 0.0, 0.0);
        assert_close(&exact, &truth, 1e-9);
        let noisy = recovered(op, Algo::Ring, &truth, &TWO_LEVEL, 0.02, 0.05);
        assert_close(&noisy, &truth, 0.02);
        assert_eq!(noisy.nodes, vec![1, 1, 2, 4, 8]);
        assert_eq!(noisy.holdout.len(), TWO_LEVEL.len());
    }
}

#[test]
fn one_world_size_gives_a_note_not_a_model() {
    let c = curves(
        Op::AllGather,
        Algo::Ring,
        Form::Ring,
        &[3.0, 0.1],
        &[(4, 1)],
        0.0,
        0.0,
    );
    let mut notes = Vec::new();
    let models = fit_models(&c, (&BuildOptions::default(), ""), &mut notes);
    assert!(models.is_empty());
    assert!(
        notes.iter().any(|n| n.contains("one world size only (4)")),
        "{notes:?}"
    );
}

#[test]
fn each_protocol_of_a_run_is_its_own_curve_and_model() {
    use crate::fit::testrun::{ll_and_simple, run};
    let truths = ll_and_simple();
    let f = build(&[run(&truths, &[2, 4])], &BuildOptions::default());
    assert_eq!(f.curves.len(), 4, "{:#?}", f.notes);
    for c in &f.curves {
        let t = truths.iter().find(|t| t.proto == c.key.proto).unwrap();
        let (a, b) = (c.line.alpha_us.value, c.line.beta_ns_per_byte.value);
        assert!(
            (a / t.alpha_us - 1.0).abs() < 1e-9,
            "{}: {a}",
            describe(&c.key)
        );
        assert!(
            (b / t.beta_ns_per_byte - 1.0).abs() < 1e-9,
            "{}: {b}",
            describe(&c.key)
        );
        assert_eq!(c.sizes, 9);
    }
    let protos =
        |v: Vec<Option<Proto>>| v.into_iter().map(|p| p.unwrap().name()).collect::<Vec<_>>();
    let curve_protos = protos(f.curves.iter().map(|c| c.key.proto).collect());
    assert_eq!(curve_protos, ["ll", "simple", "ll", "simple"]);
    assert_eq!(f.curves[0].key.world, 2);
    assert_eq!(
        describe(&f.curves[1].key),
        "nccl allreduce ring/simple f32 world 2"
    );
    let selected = f.models.iter().filter(|m| m.selected);
    let model_protos = protos(selected.map(|m| m.proto).collect());
    assert_eq!(model_protos, ["ll", "simple"]);
}

#[test]
fn each_communicator_setup_is_its_own_curve_and_model() {
    use crate::fit::testrun::{run, Truth};
    use crate::model::call::Register;
    use crate::model::comm_setup::CommSetup;
    let truth = |alpha_us| Truth {
        proto: Some(Proto::Auto),
        alpha_us,
        beta_ns_per_byte: 0.05,
    };
    let local = CommSetup {
        register: Some(Register::Local),
        ..Default::default()
    };
    let mut r = run(&[truth(20.0)], &[2, 4]);
    let registered = run(&[truth(8.0)], &[2, 4]).points.into_iter().map(|mut p| {
        p.record.key.comm = local;
        p
    });
    r.points.extend(registered);
    let f = build(&[r], &BuildOptions::default());
    assert_eq!(f.curves.len(), 4, "{:#?}", f.notes);
    for c in &f.curves {
        let want = if c.key.comm == local { 8.0 } else { 20.0 };
        let a = c.line.alpha_us.value;
        assert!((a / want - 1.0).abs() < 1e-9, "{}: {a}", describe(&c.key));
    }
    assert!(f
        .curves
        .iter()
        .any(|c| describe(&c.key) == "nccl allreduce ring/auto register local f32 world 4"));
    let selected: Vec<CommSetup> = f
        .models
        .iter()
        .filter(|m| m.selected)
        .map(|m| m.comm)
        .collect();
    assert_eq!(selected, [CommSetup::default(), local]);
    // A prediction takes the setup's own model: the default unless the query names one.
    use crate::fit::predict::{parse_query, predict};
    let at = |spec: &str| predict(&f, &parse_query(spec).unwrap()).unwrap().time_us;
    let spec = "op=allreduce,algo=ring,world=4,bytes=1K";
    let (plain, registered) = (at(spec), at(&format!("{spec},register=local")));
    assert!(plain > 15.0 && registered < 12.0, "{plain} {registered}");
    assert_eq!(at(&format!("{spec},register=none")), plain);
    let e = predict(&f, &parse_query(&format!("{spec},ctas=4")).unwrap()).unwrap_err();
    assert!(e.to_string().contains("no model"), "{e}");
}

#[test]
fn points_without_a_protocol_fit_as_before() {
    use crate::fit::testrun::{run, Truth};
    let host = Truth {
        proto: None,
        alpha_us: 3.0,
        beta_ns_per_byte: 0.25,
    };
    let f = build(&[run(&[host], &[2, 4])], &BuildOptions::default());
    assert_eq!(f.curves.len(), 2);
    assert!(f.curves.iter().all(|c| c.key.proto.is_none()));
    assert_eq!(
        describe(&f.curves[0].key),
        "host allreduce ring f32 world 2"
    );
    assert!(f.models.iter().all(|m| m.proto.is_none()));
}

#[path = "tests/selection.rs"]
mod selection;

#[test]
fn an_imported_log_too_noisy_to_fit_is_not_told_to_rerun_with_more_iters() {
    use crate::fit::testrun::{run, Truth};
    let truth = Truth {
        proto: Some(Proto::Auto),
        alpha_us: 20.0,
        beta_ns_per_byte: 0.05,
    };
    let noisy = |imported: bool| {
        let mut r = run(&[truth], &[2, 4]);
        for (i, p) in r.points.iter_mut().enumerate() {
            let wild = if i % 2 == 0 { 9.0 } else { 0.2 };
            p.record.time_us_median *= wild;
            p.samples.iter_mut().for_each(|s| s.time_us *= wild);
        }
        if imported {
            r.meta.options = serde_json::json!({"imported": true});
        }
        build(&[r], &BuildOptions::default()).notes.join("\n")
    };
    let own = noisy(false);
    assert!(
        own.contains("too noisy") && own.contains("more --iters"),
        "{own}"
    );
    let imported = noisy(true);
    assert!(imported.contains("too noisy"), "{imported}");
    assert!(
        !imported.contains("--iters") && imported.contains("collbench sweep"),
        "{imported}"
    );
}
