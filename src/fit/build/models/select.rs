//! Choosing among candidate forms by how well each predicts the largest world from the
//! smaller ones: the question a cross-world model is for.

use super::super::super::forms::Form;
use super::super::super::regress;
use super::super::super::schema::{Extrapolation, WorldModel};
use super::super::{holdout_summary, BuildOptions};
use super::{world_obs, WorldCurves};
use crate::collective::Op;
use crate::stats::Summary;

/// Differences of extrapolation error below this (0.5 percentage points) are noise: the
/// earlier candidate (the algorithm's own shape) keeps the choice.
const TIE: f64 = 0.005;

/// The error of `form` predicting the largest world from the strictly smaller ones: plain,
/// anchored on the largest smaller world's measured medians, and the naive guess's.
pub(super) fn extrapolation(
    form: Form,
    op: Op,
    worlds: &WorldCurves,
    opts: &BuildOptions,
) -> Option<Extrapolation> {
    let &held = worlds.keys().next_back()?;
    let from = *worlds.keys().rfind(|w| w.0 < held.0)?;
    let smaller = world_obs(form, op, worlds, |w| w.0 < held.0);
    let fit = regress::fit(&smaller, &opts.robust).ok()?;
    let model = |w: (usize, usize), bytes: usize| {
        let x = form.coefficients(op, w.0, w.1, bytes as f64)?;
        Some(regress::predict(&fit, &x).0)
    };
    let (small, large) = (worlds.get(&from)?, worlds.get(&held)?);
    let mut plain = Vec::new();
    let mut anchored = Vec::new();
    let mut naive = Vec::new();
    let scale = op.busbw_factor(held.0) / op.busbw_factor(from.0);
    for (&bytes, samples) in large.iter() {
        let Some(measured) = Summary::of(samples).map(|s| s.median) else {
            continue;
        };
        let Some(predicted) = model(held, bytes) else {
            continue;
        };
        plain.push(rel_err(predicted, measured));
        let Some(before) = small
            .get(&bytes)
            .and_then(|s| Summary::of(s))
            .map(|s| s.median)
        else {
            continue;
        };
        naive.push(rel_err(scale * before, measured));
        if let Some(at_from) = model(from, bytes).filter(|t| *t > 0.0) {
            anchored.push(rel_err(before * predicted / at_from, measured));
        }
    }
    let mean = |v: &[f64]| (!v.is_empty()).then(|| holdout_summary(v.iter().copied()).rel_err_mean);
    let plain_errors = (!plain.is_empty()).then(|| holdout_summary(plain.into_iter()))?;
    Some(Extrapolation {
        world: held.0,
        nodes: held.1,
        from_world: from.0,
        rel_err_mean: plain_errors.rel_err_mean,
        rel_err_max: plain_errors.rel_err_max,
        anchored_rel_err_mean: mean(&anchored),
        naive_rel_err_mean: mean(&naive),
    })
}

/// |predicted − measured| / measured (measured times are positive: the reader refuses others).
fn rel_err(predicted: f64, measured: f64) -> f64 {
    (predicted - measured).abs() / measured
}

/// Marks the candidate with the lowest extrapolation error (ties to the earlier one; the first
/// when none could be validated) and writes why; returns its index. `fitted` is not empty.
pub(super) fn select(fitted: &mut [WorldModel], failed: &[String]) -> usize {
    let err = |m: &WorldModel| m.extrapolation.as_ref().map(|e| e.rel_err_mean);
    let mut best: Option<(usize, f64)> = None;
    for (i, e) in fitted
        .iter()
        .enumerate()
        .filter_map(|(i, m)| Some((i, err(m)?)))
    {
        if best.map_or(true, |(_, b)| e < b - TIE) {
            best = Some((i, e));
        }
    }
    let chosen = best.map_or(0, |(i, _)| i);
    let why = reason(fitted, failed, best.is_some());
    let m = &mut fitted[chosen];
    m.selected = true;
    m.selection = Some(why);
    chosen
}

/// "chosen by its error predicting world 80 (10 nodes) from worlds up to 16: nccl-ring 4.1%,
/// two-level 9.3% (...); naive 12%".
fn reason(fitted: &[WorldModel], failed: &[String], validated: bool) -> String {
    let listed: Vec<String> = fitted
        .iter()
        .map(|m| match &m.extrapolation {
            Some(e) => format!("{} {:.1}%", m.form, 100.0 * e.rel_err_mean),
            None => format!("{} not validated", m.form),
        })
        .chain(failed.iter().cloned())
        .collect();
    let target = fitted.iter().find_map(|m| m.extrapolation.as_ref());
    match (validated, target) {
        (true, Some(e)) => format!(
            "lowest mean error predicting world {} ({} node{}) from worlds up to {}: {}{}",
            e.world,
            e.nodes,
            if e.nodes == 1 { "" } else { "s" },
            e.from_world,
            listed.join(", "),
            e.naive_rel_err_mean
                .map(|n| format!("; the naive same-busbw guess {:.1}%", 100.0 * n))
                .unwrap_or_default()
        ),
        _ => format!(
            "the algorithm's own form, not validated: the smaller worlds cannot determine any \
             candidate ({})",
            listed.join(", ")
        ),
    }
}
