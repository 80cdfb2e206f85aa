//! A group's calibration ([`Calibration`]) fitted to published runs, and judged on runs it was
//! not fitted to: leave one series out. A group is a profile's anchors, or those of a profile
//! and one framework ([`Grouping`]); its anchors fall into folds (a series, or an anchor in
//! none); each fold is projected with the calibration fitted to its group's other folds, so
//! every error it gets is a held-out one. No parameter belongs to one anchor.
//!
//! Which parameters a fit may move, and the grouping, are themselves judged on held-out runs:
//! `collbench anchors --calibrate` fits every pair of [`Grouping`] and [`Params`] and keeps the
//! one whose held-out error is lowest among those whose fits leave every parameter inside its
//! range ([`Fitted::on_edge`]).
//!
//! The fit minimises the mean squared log error of the step times (a run 1.25 times too slow
//! weighs as one 1.25 times too fast) within [`Calibration::SCALE_RANGE`] and
//! [`Calibration::GAP_RANGE_S`]: `ln compute_scale` alone by golden-section search, two
//! parameters (with `layer_gap_s` in milliseconds or `ln memory_scale`) by Nelder and Mead's
//! simplex.

use super::anchors::{first_seen, project_anchor, Anchor, Errors, Projected};
use super::calibration::Calibration;
use crate::error::Result;

/// Which of the calibration's parameters a fit may move; the others stay at the identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Params {
    /// `compute_scale` only.
    Scale,
    /// `compute_scale` and `layer_gap_s`.
    ScaleAndGap,
    /// `compute_scale` and `memory_scale`.
    ScaleAndMemory,
}

impl Params {
    pub const ALL: [Params; 3] = [Params::Scale, Params::ScaleAndGap, Params::ScaleAndMemory];

    pub fn name(self) -> &'static str {
        match self {
            Params::Scale => "compute_scale",
            Params::ScaleAndGap => "compute_scale and layer_gap_s",
            Params::ScaleAndMemory => "compute_scale and memory_scale",
        }
    }
}

/// Which anchors share a calibration: those on one GPU's profile, or those on one profile
/// that also ran on one framework.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    Profile,
    ProfileAndFramework,
    /// The anchors given are one group (those `project` chose: one GPU's, or one framework's
    /// on it).
    Given,
}

impl Grouping {
    pub const ALL: [Grouping; 2] = [Grouping::Profile, Grouping::ProfileAndFramework];

    pub fn name(self) -> &'static str {
        match self {
            Grouping::Profile => "per profile",
            Grouping::ProfileAndFramework => "per profile and framework",
            Grouping::Given => "as given",
        }
    }

    /// The group `a` falls in: its profile, and its framework where that counts.
    pub fn of(self, a: &Anchor) -> (&str, &str) {
        match self {
            Grouping::Profile => (&a.profile, ""),
            Grouping::ProfileAndFramework => (&a.profile, a.framework()),
            Grouping::Given => ("", ""),
        }
    }
}

/// Simplex evaluations per fit: enough to settle two parameters to well under a percent.
const MAX_EVALS: usize = 160;

/// An anchor projected with the calibration fitted without its fold.
#[derive(Clone, Debug, PartialEq)]
pub struct HeldOut {
    pub projected: Projected,
    pub calibration: Calibration,
}

/// The calibration at simplex point `x` (`ln compute_scale`, then the gap in ms or
/// `ln memory_scale`), held within the bounds.
fn at(x: [f64; 2], params: Params) -> Calibration {
    let (lo, hi) = Calibration::SCALE_RANGE;
    let (glo, ghi) = Calibration::GAP_RANGE_S;
    let scale = |v: f64| v.exp().clamp(lo, hi);
    let mut c = Calibration {
        compute_scale: scale(x[0]),
        ..Calibration::IDENTITY
    };
    match params {
        Params::Scale => {}
        Params::ScaleAndGap => c.layer_gap_s = (x[1] / 1e3).clamp(glo, ghi),
        Params::ScaleAndMemory => c.memory_scale = scale(x[1]),
    }
    c
}

/// Mean squared log error of `anchors` projected with `cal`.
pub fn loss(anchors: &[&Anchor], cal: Calibration) -> Result<f64> {
    let mut sum = 0.0;
    for a in anchors {
        let p = project_anchor(a, cal)?;
        let e = (p.step_s / a.step_s).ln();
        sum += if e.is_finite() { e * e } else { 1e6 };
    }
    Ok(sum / anchors.len().max(1) as f64)
}

/// The calibration that fits `anchors` best; the identity for none.
pub fn fit(anchors: &[&Anchor], params: Params) -> Result<Calibration> {
    if anchors.is_empty() {
        return Ok(Calibration::IDENTITY);
    }
    let f = |x: [f64; 2]| loss(anchors, at(x, params));
    if params == Params::Scale {
        // One parameter: a golden-section search, a fifth of the simplex's projections.
        let (lo, hi) = Calibration::SCALE_RANGE;
        let x = golden(|x| f([x, 0.0]), lo.ln(), hi.ln())?;
        return Ok(at([x, 0.0], params));
    }
    let mut simplex = [[0.0, 0.0], [0.3, 0.0], [0.0, 2.0]];
    let mut values = [f(simplex[0])?, f(simplex[1])?, f(simplex[2])?];
    let mut evals = 3;
    while evals < MAX_EVALS {
        let mut order = [0, 1, 2];
        order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
        let (best, mid, worst) = (order[0], order[1], order[2]);
        if values[worst] - values[best] < 1e-10 {
            break;
        }
        let centre = [0, 1].map(|k| (simplex[best][k] + simplex[mid][k]) / 2.0);
        let towards = |t: f64| [0, 1].map(|k| centre[k] + t * (simplex[worst][k] - centre[k]));
        let reflected = towards(-1.0);
        let r = f(reflected)?;
        evals += 1;
        let (point, value) = if r < values[best] {
            let expanded = towards(-2.0);
            let e = f(expanded)?;
            evals += 1;
            if e < r {
                (expanded, e)
            } else {
                (reflected, r)
            }
        } else if r < values[mid] {
            (reflected, r)
        } else {
            let contracted = towards(0.5);
            let c = f(contracted)?;
            evals += 1;
            if c < values[worst] {
                (contracted, c)
            } else {
                // Shrink towards the best point.
                for i in [mid, worst] {
                    simplex[i] = [0, 1].map(|k| (simplex[i][k] + simplex[best][k]) / 2.0);
                    values[i] = f(simplex[i])?;
                    evals += 1;
                }
                continue;
            }
        };
        simplex[worst] = point;
        values[worst] = value;
    }
    let best = (0..3).min_by(|&i, &j| values[i].total_cmp(&values[j]));
    Ok(at(simplex[best.unwrap_or(0)], params))
}

/// The minimum of `f` on `[lo, hi]` (unimodal there) to 1e-4 (a scale to 0.01%), by
/// golden-section search.
fn golden(f: impl Fn(f64) -> Result<f64>, mut lo: f64, mut hi: f64) -> Result<f64> {
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (hi - r * (hi - lo), lo + r * (hi - lo));
    let (mut fa, mut fb) = (f(a)?, f(b)?);
    while hi - lo > 1e-4 {
        if fa <= fb {
            (hi, b, fb) = (b, a, fa);
            a = hi - r * (hi - lo);
            fa = f(a)?;
        } else {
            (lo, a, fa) = (a, b, fb);
            b = lo + r * (hi - lo);
            fb = f(b)?;
        }
    }
    Ok((lo + hi) / 2.0)
}

/// The errors of held-out projections.
pub fn errors(held: &[HeldOut]) -> Errors {
    Errors::of(held.iter().map(|h| h.projected.error()))
}

/// The fold an anchor falls in: its series, else itself.
fn fold(a: &Anchor) -> &str {
    a.series.as_deref().unwrap_or(&a.id)
}

/// How many folds `anchors` fall into: with fewer than two, none can be held out.
pub fn folds(anchors: &[Anchor]) -> usize {
    first_seen(anchors.iter().map(fold)).len()
}

/// Every anchor projected with its group's calibration fitted to the group's other folds, in
/// the anchors' order.
pub fn held_out(anchors: &[Anchor], params: Params, grouping: Grouping) -> Result<Vec<HeldOut>> {
    let mut out = Vec::with_capacity(anchors.len());
    let mut fitted: Vec<((&str, &str), &str, Calibration)> = Vec::new();
    for a in anchors {
        let (group, f) = (grouping.of(a), fold(a));
        let known = fitted.iter().find(|(g, h, _)| (*g, *h) == (group, f));
        let cal = match known.map(|t| t.2) {
            Some(c) => c,
            None => {
                let training: Vec<&Anchor> = (anchors.iter())
                    .filter(|b| grouping.of(b) == group && fold(b) != f)
                    .collect();
                let c = fit(&training, params)?;
                fitted.push((group, f, c));
                c
            }
        };
        out.push(HeldOut {
            projected: project_anchor(a, cal)?,
            calibration: cal,
        });
    }
    Ok(out)
}

/// A group's calibration fitted to all its anchors.
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted {
    pub profile: String,
    /// The framework, or empty where the grouping ignores it.
    pub framework: String,
    pub calibration: Calibration,
    pub anchors: usize,
}

impl Fitted {
    /// The parameter `params` moves that ended on an edge of its range, if one did: the
    /// anchors do not pin it down (a kernel scale traded against a gap or a memory scale), so
    /// a set whose fit does so is not kept. A gap of zero is no gap, a value of its own, not an
    /// edge; the ranges' other ends are the search's bounds.
    pub fn on_edge(&self, params: Params) -> Option<&'static str> {
        let c = self.calibration;
        // Within 1% of an end: the simplex stops near a bound it presses against, not on it.
        let edge = |v: f64, (lo, hi): (f64, f64)| v <= lo * 1.01 || v >= hi * 0.99;
        let scale = Calibration::SCALE_RANGE;
        let gap_cap = Calibration::GAP_RANGE_S.1 * 0.99;
        if edge(c.compute_scale, scale) {
            return Some("compute_scale");
        }
        match params {
            Params::Scale => None,
            Params::ScaleAndGap => (c.layer_gap_s >= gap_cap).then_some("layer_gap_s"),
            Params::ScaleAndMemory => edge(c.memory_scale, scale).then_some("memory_scale"),
        }
    }

    /// The group's name: its profile, and its framework where the grouping counts it.
    pub fn name(&self) -> String {
        match self.framework.is_empty() {
            true => self.profile.clone(),
            false => format!("{} {}", self.profile, self.framework),
        }
    }
}

/// Each group's calibration fitted to all of its anchors, in the order the groups first appear.
pub fn per_group(anchors: &[Anchor], params: Params, grouping: Grouping) -> Result<Vec<Fitted>> {
    (first_seen(anchors.iter().map(|a| grouping.of(a))).into_iter())
        .map(|g| {
            let of: Vec<&Anchor> = anchors.iter().filter(|a| grouping.of(a) == g).collect();
            Ok(Fitted {
                profile: g.0.to_string(),
                framework: g.1.to_string(),
                calibration: fit(&of, params)?,
                anchors: of.len(),
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "anchors_fit_tests.rs"]
mod tests;
