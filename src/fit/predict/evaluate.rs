//! One model evaluated for one query: the form's time and confidence interval, anchored on
//! the largest world's measurement beyond it ([`super::anchor`]) and widened with the
//! distance ([`super::beyond`]).

use super::super::forms::Form;
use super::super::schema::{FitFile, WorldModel};
use super::{anchor, beyond, Prediction, Query};
use crate::collective::busbw_gbps;
use crate::error::{Error, Result};

/// The model's mean time (µs) and the half-width of its confidence interval at a point.
fn model_time(m: &WorldModel, q: &Query, world: usize, nodes: usize) -> Result<(f64, f64)> {
    let bad = |msg: String| Error::usage(format!("model {} {} {}: {msg}", m.op, m.algo, m.form));
    let form = Form::from_name(&m.form).ok_or_else(|| bad("unknown form".into()))?;
    let x = form
        .coefficients(q.op, world, nodes, q.bytes as f64)
        .ok_or_else(|| {
            bad(format!(
                "does not describe {} ranks on {nodes} nodes",
                world
            ))
        })?;
    if x.len() != m.params.len() || m.covariance.len() != x.len() {
        return Err(bad("parameters do not match the form".into()));
    }
    let time_us: f64 = x
        .iter()
        .zip(&m.params)
        .map(|(c, p)| c * p.param.value)
        .sum();
    let var: f64 = (0..x.len())
        .flat_map(|i| (0..x.len()).map(move |j| (i, j)))
        .map(|(i, j)| x[i] * m.covariance[i].get(j).copied().unwrap_or(0.0) * x[j])
        .sum();
    Ok((time_us, m.t_quantile * var.max(0.0).sqrt()))
}

/// The anchor and the factor (measured / model at the anchor) for a query beyond the
/// fitted worlds, when the fit holds the curve and anchoring predicted the model's largest
/// world from the smaller ones at least as well as the model alone.
fn anchoring(fit: &FitFile, m: &WorldModel, q: &Query) -> Option<(anchor::Anchor, f64)> {
    let e = m.extrapolation.as_ref()?;
    if e.anchored_rel_err_mean? > e.rel_err_mean {
        return None;
    }
    let a = anchor::anchor(fit, m, q.bytes)?;
    let (at_anchor, _) = model_time(m, q, a.world, a.nodes).ok()?;
    (at_anchor > 0.0).then(|| {
        let ratio = a.measured_us / at_anchor;
        (a, ratio)
    })
}

pub(super) fn evaluate(fit: &FitFile, m: &WorldModel, q: &Query) -> Result<Prediction> {
    let (model_us, half) = model_time(m, q, q.world, q.nodes)?;
    let lo = m.worlds.iter().min().copied().unwrap_or(0);
    let hi = m.worlds.iter().max().copied().unwrap_or(0);
    let anchored = if q.world > hi {
        anchoring(fit, m, q)
    } else {
        None
    };
    let ratio = anchored.as_ref().map_or(1.0, |a| a.1);
    let time_us = model_us * ratio;
    let far = beyond::beyond(m, q.world, anchored.is_some());
    let spread = half * ratio + far.widen_rel * time_us.abs();
    let algbw = if time_us > 0.0 {
        q.bytes as f64 / time_us / 1e3
    } else {
        0.0
    };
    Ok(Prediction {
        op: q.op,
        algo: q.algo,
        proto: m.proto,
        dtype: m.dtype,
        world: q.world,
        nodes: q.nodes,
        bytes: q.bytes,
        time_us,
        interval_us: [time_us - spread, time_us + spread],
        confidence: fit.method.confidence,
        algbw_gbps: algbw,
        busbw_gbps: busbw_gbps(q.op, q.world, algbw),
        form: m.form.clone(),
        formula: m.formula.clone(),
        fitted_worlds: m.worlds.clone(),
        extrapolated: q.world < lo || q.world > hi,
        held_out_rel_err: far.held_out_rel_err,
        beyond_factor: far.factor,
        widened_rel: far.widen_rel,
        warning: far.warning,
        anchor: anchored.map(|a| a.0),
        model_time_us: model_us,
        auto_choice: None,
    })
}
