//! Cross-world models: every candidate form of [`Form::candidates`] fitted to the curves of one
//! (backend, op, algo, dtype, placement, protocol), each with its error on every world held
//! out and on the largest world predicted from the smaller ones; [`select`] marks the one
//! that extrapolates best.

use std::collections::BTreeMap;

use super::super::curves::Curve;
use super::super::envelope;
use super::super::forms::Form;
use super::super::regress::{self, FitError, Obs};
use super::super::schema::*;
use super::{holdout_summary, param, quality, BuildOptions};
use crate::collective::Op;

mod select;

/// What a cross-world model keys on: a curve's key without its world and nodes (0).
type ModelKey = CurveKey;

/// Curves of one model key: (world, nodes) → curve.
type WorldCurves<'a> = BTreeMap<(usize, usize), &'a Curve>;

pub(super) fn fit_models(
    curves: &BTreeMap<CurveKey, Curve>,
    (opts, advice): (&BuildOptions, &str),
    notes: &mut Vec<String>,
) -> Vec<WorldModel> {
    let mut by_model: BTreeMap<ModelKey, WorldCurves> = BTreeMap::new();
    for (k, c) in curves.iter().filter(|(k, _)| k.world > 1) {
        let mk = CurveKey {
            world: 0,
            nodes: 0,
            ..k.clone()
        };
        by_model
            .entry(mk)
            .or_default()
            .insert((k.world, k.nodes), c);
    }
    let mut models = Vec::new();
    for (mk, worlds) in &by_model {
        models.extend(fit_candidates(mk, worlds, (opts, advice), notes));
    }
    models
}

fn model_name(mk: &ModelKey) -> String {
    format!(
        "{} {} {} {}{}{}{}",
        mk.backend,
        mk.op,
        algo_label(mk.algo, mk.proto),
        mk.dtype,
        if mk.in_place { " in place" } else { "" },
        mk.comm.label(),
        mk.traffic
            .as_ref()
            .map_or(String::new(), |t| format!(" traffic {t}")),
    )
}

/// Every candidate form fitted to one key's curves, the best extrapolating one selected.
fn fit_candidates(
    mk: &ModelKey,
    worlds: &WorldCurves,
    (opts, advice): (&BuildOptions, &str),
    notes: &mut Vec<String>,
) -> Vec<WorldModel> {
    let name = model_name(mk);
    let multi_node = worlds.keys().any(|&(_, n)| n > 1);
    let mut fitted = Vec::new();
    let mut failed = Vec::new();
    let candidates = Form::candidates(mk.algo, multi_node);
    for form in candidates.into_iter().filter(|f| f.covers(mk.op)) {
        match fit_world_model(mk, form, worlds, opts) {
            Ok(m) => fitted.push(m),
            Err(e) => failed.push(format!("{}: {e}", form.name())),
        }
    }
    if fitted.is_empty() {
        notes.push(format!(
            "{name}: no model across world sizes: {}",
            failed.join("; ")
        ));
        return fitted;
    }
    let chosen = select::select(&mut fitted, &failed);
    notes.extend(model_too_noisy(&name, &fitted[chosen], advice));
    if !multi_node {
        notes.push(format!(
            "{name}: no model with node terms: every point ran on one node"
        ));
    }
    fitted
}

/// The note for a cross-world model that explains its points worse than their mean, or misses
/// one by more than [`envelope::MISFIT`] (its curves' notes name the sizes).
fn model_too_noisy(name: &str, m: &WorldModel, advice: &str) -> Option<String> {
    let q = &m.quality;
    (q.r2 < 0.0 || q.rel_err_max > envelope::MISFIT).then(|| {
        format!(
            "{name}: {} model too noisy to trust: R2 {:.2}, off by up to {:.0}% at some size; \
             {advice}",
            m.form,
            q.r2,
            100.0 * q.rel_err_max
        )
    })
}

/// Why a cross-world model was not made.
#[derive(Debug, thiserror::Error)]
enum ModelError {
    #[error("measured at one world size only ({0}); a model across world sizes needs two or more")]
    OneWorld(usize),
    #[error("{0}")]
    Fit(#[from] FitError),
}

/// Observations of the curves `keep` admits, one group per (world, size).
fn world_obs(
    form: Form,
    op: Op,
    worlds: &WorldCurves,
    keep: impl Fn((usize, usize)) -> bool,
) -> Vec<Obs> {
    let mut obs = Vec::new();
    let mut group = 0;
    for (&(p, nodes), curve) in worlds.iter().filter(|(w, _)| keep(**w)) {
        for (&bytes, samples) in curve.iter() {
            let Some(x) = form.coefficients(op, p, nodes, bytes as f64) else {
                continue;
            };
            obs.extend(samples.iter().map(|&y| Obs {
                x: x.clone(),
                y,
                group,
            }));
            group += 1;
        }
    }
    obs
}

fn fit_world_model(
    mk: &ModelKey,
    form: Form,
    worlds: &WorldCurves,
    opts: &BuildOptions,
) -> Result<WorldModel, ModelError> {
    if worlds.len() < 2 {
        let w = worlds.keys().next().map_or(0, |w| w.0);
        return Err(ModelError::OneWorld(w));
    }
    let op = mk.op;
    let obs = world_obs(form, op, worlds, |_| true);
    let fit = regress::fit(&obs, &opts.robust)?;
    let holdout = worlds
        .keys()
        .filter_map(|&w| world_holdout(form, op, worlds, w, opts))
        .collect();
    let params = form
        .param_names()
        .iter()
        .enumerate()
        .map(|(i, name)| NamedParam {
            name: name.to_string(),
            param: param(&fit, i),
        })
        .collect();
    Ok(WorldModel {
        backend: mk.backend.clone(),
        op,
        algo: mk.algo,
        dtype: mk.dtype,
        in_place: mk.in_place,
        proto: mk.proto,
        comm: mk.comm,
        traffic: mk.traffic.clone(),
        form: form.name().into(),
        formula: form.formula(op),
        params,
        covariance: fit.covariance.clone(),
        t_quantile: fit.t_quantile,
        worlds: worlds.keys().map(|w| w.0).collect(),
        nodes: worlds.keys().map(|w| w.1).collect(),
        quality: quality(&fit),
        holdout,
        selected: false,
        extrapolation: select::extrapolation(form, op, worlds, opts),
        selection: None,
    })
}

/// The relative errors predicting the per-size medians of world `held` from a fit without it.
fn held_out_errors(
    form: Form,
    op: Op,
    worlds: &WorldCurves,
    held: (usize, usize),
    opts: &BuildOptions,
) -> Option<Vec<f64>> {
    let rest = world_obs(form, op, worlds, |w| w != held);
    let fit = regress::fit(&rest, &opts.robust).ok()?;
    let curve = worlds.get(&held)?;
    let errs = curve.iter().filter_map(|(&bytes, samples)| {
        let x = form.coefficients(op, held.0, held.1, bytes as f64)?;
        let (pred, _) = regress::predict(&fit, &x);
        let m = crate::stats::Summary::of(samples)?.median;
        Some((pred - m).abs() / m)
    });
    Some(errs.collect())
}

/// Fits without world `held` and measures the error predicting its per-size medians.
fn world_holdout(
    form: Form,
    op: Op,
    worlds: &WorldCurves,
    held: (usize, usize),
    opts: &BuildOptions,
) -> Option<WorldHoldout> {
    let errs = held_out_errors(form, op, worlds, held, opts)?;
    let h = holdout_summary(errs.into_iter());
    Some(WorldHoldout {
        world: held.0,
        nodes: held.1,
        rel_err_mean: h.rel_err_mean,
        rel_err_max: h.rel_err_max,
    })
}
