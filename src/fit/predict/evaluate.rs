//! One model evaluated for one query: the form's time and confidence interval, anchored on
//! the largest world's measurement beyond it ([`super::anchor`]) and widened with the
//! distance ([`super::beyond`]).

use super::super::forms::Form;
use super::super::schema::{FitFile, WorldModel};
use super::{anchor, beyond, Prediction, Query};
use crate::collective::{algbw_gbps, busbw_gbps};
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

/// How a prediction beyond the fitted worlds was made.
pub(super) struct Beyond {
    anchor: anchor::Anchor,
    /// answer / the model's own time at the query.
    ratio: f64,
    method: &'static str,
    /// The method's error predicting the model's largest world from the smaller ones.
    held_out: f64,
}

/// Beyond the fitted worlds, the method that predicted the model's largest world from the
/// smaller ones best: the model (None), the model's ratio on the largest world's measured
/// curve (`anchored`), or that curve at the same bus bandwidth (`same-busbw`); the last two
/// only when the fit holds the curve.
fn anchoring(fit: &FitFile, m: &WorldModel, q: &Query, model_us: f64) -> Option<Beyond> {
    let e = m.extrapolation.as_ref()?;
    let anchored = e.anchored_rel_err_mean.unwrap_or(f64::INFINITY);
    let naive = e.naive_rel_err_mean.unwrap_or(f64::INFINITY);
    if e.rel_err_mean <= anchored.min(naive) || model_us <= 0.0 {
        return None;
    }
    let a = anchor::anchor(fit, m, q.bytes)?;
    let (method, held_out, answer) = if naive < anchored {
        let scale = q.op.busbw_factor(q.world) / q.op.busbw_factor(a.world);
        ("same-busbw", naive, a.measured_us * scale)
    } else {
        let (at_anchor, _) = model_time(m, q, a.world, a.nodes).ok()?;
        let answer = a.measured_us * model_us / at_anchor;
        ("anchored", anchored, answer)
    };
    (answer.is_finite() && answer > 0.0).then(|| Beyond {
        ratio: answer / model_us,
        anchor: a,
        method,
        held_out,
    })
}

/// The interval of a time `t` with half-width `spread`, kept positive: `[t / (1 + r), t (1 + r)]`
/// with `r = spread / t`, symmetric in log time, which is `t ± spread` to first order where the
/// spread is small and never reaches zero where it is not (a time is positive; a straight
/// `t − spread` went below zero on wide extrapolations).
pub fn positive_interval(t: f64, spread: f64) -> [f64; 2] {
    if t.is_nan() || t <= 0.0 || !spread.is_finite() {
        return [t - spread, t + spread];
    }
    let r = spread.max(0.0) / t;
    [t / (1.0 + r), t * (1.0 + r)]
}

pub(super) fn evaluate(fit: &FitFile, m: &WorldModel, q: &Query) -> Result<Prediction> {
    let (model_us, half) = model_time(m, q, q.world, q.nodes)?;
    let lo = m.worlds.iter().min().copied().unwrap_or(0);
    let hi = m.worlds.iter().max().copied().unwrap_or(0);
    let anchored = if q.world > hi {
        anchoring(fit, m, q, model_us)
    } else {
        None
    };
    let ratio = anchored.as_ref().map_or(1.0, |a| a.ratio);
    let time_us = model_us * ratio;
    let held_out = match &anchored {
        Some(a) => Some(a.held_out),
        None => m.extrapolation.as_ref().map(|e| e.rel_err_mean),
    };
    let far = beyond::beyond(m, q.world, held_out);
    let spread = half * ratio + far.widen_rel * time_us.abs();
    let algbw = algbw_gbps(q.op, q.bytes, q.world, time_us);
    Ok(Prediction {
        op: q.op,
        algo: q.algo,
        proto: m.proto,
        dtype: m.dtype,
        world: q.world,
        nodes: q.nodes,
        bytes: q.bytes,
        time_us,
        interval_us: positive_interval(time_us, spread),
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
        method: anchored.as_ref().map_or("model", |a| a.method).into(),
        anchor: anchored.map(|a| a.anchor),
        model_time_us: model_us,
        auto_choice: None,
        algo_default: None,
    })
}

#[cfg(test)]
mod interval_tests {
    use super::positive_interval;

    #[test]
    fn an_interval_is_symmetric_in_log_time_and_never_reaches_zero() {
        assert_eq!(positive_interval(100.0, 0.0), [100.0, 100.0]);
        let [lo, hi] = positive_interval(100.0, 1.0);
        assert_eq!(hi, 101.0);
        assert!((lo - 100.0 / 1.01).abs() < 1e-12 && lo > 99.0);
        // The case seen: 185245 us with a half-width of 723884 us was [-538639 .. 909129].
        let [lo, hi] = positive_interval(185245.055, 723884.586);
        assert!(
            lo > 0.0 && (lo * hi - 185245.055f64.powi(2)).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert_eq!(hi, 185245.055 + 723884.586);
    }
}
