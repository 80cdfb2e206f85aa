//! Hand-built fits for the exporters' tests (never the fitter).

use crate::collective::{Algo, DType, Op};
use crate::fit::forms::Form;
use crate::fit::schema::*;

pub fn p(v: f64) -> Param {
    Param {
        value: v,
        stderr: 0.0,
        ci: [v, v],
    }
}

fn quality() -> Quality {
    Quality {
        r2: 0.99,
        rel_err_mean: 0.01,
        rel_err_max: 0.02,
        samples: 100,
        downweighted: 0,
        groups: 10,
    }
}

/// A model of `op`/`algo` in `form` with `values` in the form's parameter order, fitted on
/// `worlds` ((world, nodes) pairs).
pub fn model(
    op: Op,
    algo: Algo,
    form: Form,
    values: &[f64],
    worlds: &[(usize, usize)],
) -> WorldModel {
    let names = form.param_names();
    assert_eq!(names.len(), values.len());
    WorldModel {
        backend: "host".into(),
        op,
        algo,
        dtype: DType::F32,
        in_place: false,
        proto: None,
        comm: Default::default(),
        traffic: None,
        form: form.name().into(),
        formula: form.formula(op),
        params: names
            .iter()
            .zip(values)
            .map(|(n, &v)| NamedParam {
                name: n.to_string(),
                param: p(v),
            })
            .collect(),
        covariance: vec![vec![0.0; values.len()]; values.len()],
        t_quantile: 2.0,
        worlds: worlds.iter().map(|w| w.0).collect(),
        nodes: worlds.iter().map(|w| w.1).collect(),
        quality: quality(),
        holdout: vec![],
        selected: true,
        extrapolation: None,
        selection: None,
    }
}

pub fn line(min_bytes: u64, max_bytes: u64, alpha_us: f64, beta: f64) -> Line {
    Line {
        min_bytes,
        max_bytes,
        alpha_us: p(alpha_us),
        beta_ns_per_byte: p(beta),
        bandwidth_gbps: Some(1.0 / beta),
        quality: quality(),
    }
}

/// A measured curve at one world with the given regimes.
pub fn curve(op: Op, algo: Algo, world: usize, nodes: usize, segments: Vec<Line>) -> CurveFit {
    CurveFit {
        key: CurveKey {
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
        },
        sizes: 12,
        line: segments[0].clone(),
        loso: None,
        segments,
        bic: vec![],
        points: vec![],
        too_noisy: false,
    }
}

pub fn fit(models: Vec<WorldModel>, curves: Vec<CurveFit>) -> FitFile {
    FitFile {
        schema: FIT_SCHEMA.into(),
        collbench_version: "0.1.0".into(),
        created: "2026-01-01T00:00:00Z".into(),
        method: Method {
            objective: "test".into(),
            robust: "test".into(),
            intervals: "test".into(),
            confidence: 0.95,
            segments: "test".into(),
            max_segments: 3,
            min_sizes_per_segment: 4,
        },
        sources: vec![],
        curves,
        models,
        notes: vec![],
        slowdowns: vec![],
    }
}

const WORLDS: [(usize, usize); 3] = [(2, 1), (4, 1), (8, 1)];

/// Ring models of AllGather (alpha 5 µs, beta 0.1 ns/B = 10 GB/s), ReduceScatter (6 µs,
/// 0.125 ns/B = 8 GB/s) and AllReduce (7 µs, 0.2 ns/B = 5 GB/s), fitted on 2, 4, 8 ranks.
pub fn ring_fit() -> FitFile {
    let m = |op, a, b| model(op, Algo::Ring, Form::Ring, &[a, b], &WORLDS);
    fit(
        vec![
            m(Op::AllGather, 5.0, 0.1),
            m(Op::ReduceScatter, 6.0, 0.125),
            m(Op::AllReduce, 7.0, 0.2),
        ],
        vec![],
    )
}

/// Two-level models on 8, 16 and 32 ranks (8 per node): AllGather within a node 2 µs,
/// 0.02 ns/B (50 GB/s), between nodes 10 µs, 0.4 ns/B (2.5 GB/s); AllReduce 3 µs, 0.025
/// ns/B (40 GB/s), 12 µs, 0.5 ns/B (2 GB/s).
pub fn two_level_fit() -> FitFile {
    let w = [(8, 1), (16, 2), (32, 4)];
    fit(
        vec![
            model(
                Op::AllGather,
                Algo::Ring,
                Form::TwoLevel,
                &[2.0, 0.02, 10.0, 0.4],
                &w,
            ),
            model(
                Op::AllReduce,
                Algo::Ring,
                Form::TwoLevel,
                &[3.0, 0.025, 12.0, 0.5],
                &w,
            ),
        ],
        vec![],
    )
}

/// A fit with only a tree model (no ring or two-level model).
pub fn tree_only_fit() -> FitFile {
    fit(
        vec![model(
            Op::AllReduce,
            Algo::Tree,
            Form::Tree,
            &[4.0, 0.3],
            &WORLDS,
        )],
        vec![],
    )
}
