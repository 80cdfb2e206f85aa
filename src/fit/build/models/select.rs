//! Choosing among candidate forms by how well each predicts the largest world from the
//! smaller ones: the question a cross-world model is for.

use super::super::super::forms::Form;
use super::super::super::schema::{Extrapolation, WorldModel};
use super::super::BuildOptions;
use super::{held_out_errors, WorldCurves};
use crate::collective::Op;
use crate::stats::Summary;

/// Differences of extrapolation error below this (0.5 percentage points) are noise: the
/// earlier candidate (the algorithm's own shape) keeps the choice.
const TIE: f64 = 0.005;

/// The error of `form` predicting the largest world from the strictly smaller ones.
pub(super) fn extrapolation(
    form: Form,
    op: Op,
    worlds: &WorldCurves,
    opts: &BuildOptions,
) -> Option<Extrapolation> {
    let &held = worlds.keys().next_back()?;
    let from = *worlds.keys().rfind(|w| w.0 < held.0)?;
    let errs = held_out_errors(form, op, worlds, held, |w| w.0 < held.0, opts)?;
    if errs.is_empty() {
        return None;
    }
    let n = errs.len() as f64;
    Some(Extrapolation {
        world: held.0,
        nodes: held.1,
        from_world: from.0,
        rel_err_mean: errs.iter().sum::<f64>() / n,
        rel_err_max: errs.iter().cloned().fold(0.0, f64::max),
        naive_rel_err_mean: naive_error(op, worlds, from, held),
    })
}

/// The error of guessing that each size keeps at `held` the bus bandwidth it had at `from`.
fn naive_error(
    op: Op,
    worlds: &WorldCurves,
    from: (usize, usize),
    held: (usize, usize),
) -> Option<f64> {
    let (small, large) = (worlds.get(&from)?, worlds.get(&held)?);
    let scale = op.busbw_factor(held.0) / op.busbw_factor(from.0);
    let errs: Vec<f64> = large
        .iter()
        .filter_map(|(bytes, samples)| {
            let measured = Summary::of(samples)?.median;
            let guess = scale * Summary::of(small.get(bytes)?)?.median;
            Some((guess - measured).abs() / measured)
        })
        .filter(|e| e.is_finite())
        .collect();
    (!errs.is_empty()).then(|| errs.iter().sum::<f64>() / errs.len() as f64)
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
            "lowest mean error predicting world {} ({} nodes) from worlds up to {}: {}{}",
            e.world,
            e.nodes,
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
