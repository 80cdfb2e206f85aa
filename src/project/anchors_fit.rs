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
//! weighs as one 1.25 times too fast) by Nelder and Mead's simplex over `ln compute_scale` and
//! `layer_gap_s` in milliseconds or `ln memory_scale`, within [`Calibration::SCALE_RANGE`] and [`Calibration::GAP_RANGE_S`].

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
mod tests {
    use super::*;
    use crate::project::anchors::parse;

    /// Two FSDP runs on the H100 profile whose "published" steps are the projection's with
    /// kernels 1.3 times the roofline.
    fn runs() -> Vec<Anchor> {
        let text = r#"
[[anchor]]
id = "a"
series = "s"
source = "made here"
profile = "h100-ib400"
model = "llama2-7b"
world = 8
global_batch = 16
step_s = 1.0

[[anchor]]
id = "b"
source = "made here"
profile = "h100-ib400"
model = "llama2-13b"
world = 16
global_batch = 32
step_s = 1.0
"#;
        let truth = Calibration {
            compute_scale: 1.3,
            ..Calibration::IDENTITY
        };
        let mut list = parse(text).unwrap();
        for a in &mut list {
            a.step_s = project_anchor(a, truth).unwrap().step_s;
        }
        list
    }

    #[test]
    fn a_fit_finds_the_scale_the_runs_were_made_with_and_held_out_runs_land_on_them() {
        let list = runs();
        let all: Vec<&Anchor> = list.iter().collect();
        let c = fit(&all, Params::Scale).unwrap();
        assert!((c.compute_scale - 1.3).abs() < 0.005, "{c:?}");
        assert_eq!(c.layer_gap_s, 0.0);
        // Each run fitted on the other alone: the same scale, so errors near zero.
        let held = held_out(&list, Params::Scale, Grouping::Profile).unwrap();
        assert!(errors(&held).mean_abs < 0.005, "{held:?}");
        assert!(held
            .iter()
            .all(|h| (h.calibration.compute_scale - 1.3).abs() < 0.005));
    }

    #[test]
    fn a_framework_with_one_fold_on_its_profile_is_held_out_at_the_roofline() {
        let mut list = runs();
        list[0].framework = Some("eager".into());
        list[1].framework = Some("fused".into());
        let by_profile = held_out(&list, Params::Scale, Grouping::Profile).unwrap();
        assert!(by_profile.iter().all(|h| !h.calibration.is_identity()));
        let by_framework = held_out(&list, Params::Scale, Grouping::ProfileAndFramework).unwrap();
        assert!(by_framework.iter().all(|h| h.calibration.is_identity()));
        let groups = per_group(&list, Params::Scale, Grouping::ProfileAndFramework).unwrap();
        let names: Vec<&str> = groups.iter().map(|g| g.framework.as_str()).collect();
        assert_eq!(names, ["eager", "fused"]);
        assert!(groups
            .iter()
            .all(|g| g.anchors == 1 && g.on_edge(Params::Scale).is_none()));
    }

    #[test]
    fn a_fit_on_the_edge_of_a_range_is_flagged_for_the_parameters_it_moved() {
        let fitted = |compute_scale: f64, memory_scale: f64, layer_gap_s: f64| Fitted {
            profile: "p".into(),
            framework: String::new(),
            calibration: Calibration {
                compute_scale,
                memory_scale,
                layer_gap_s,
            },
            anchors: 2,
        };
        let edge = |f: Fitted, p: Params| f.on_edge(p);
        assert_eq!(edge(fitted(1.3, 1.0, 0.0), Params::Scale), None);
        assert_eq!(
            edge(fitted(0.5, 1.0, 0.0), Params::Scale),
            Some("compute_scale")
        );
        let memory = Params::ScaleAndMemory;
        assert_eq!(edge(fitted(1.3, 4.0, 0.0), memory), Some("memory_scale"));
        assert_eq!(edge(fitted(1.3, 2.0, 0.0), memory), None);
        // No gap is a value of its own; the 50 ms cap is the search's bound.
        assert_eq!(edge(fitted(1.3, 1.0, 0.0), Params::ScaleAndGap), None);
        assert_eq!(edge(fitted(1.3, 1.0, 0.002), Params::ScaleAndGap), None);
        let capped = edge(fitted(1.3, 1.0, 0.05), Params::ScaleAndGap);
        assert_eq!(capped, Some("layer_gap_s"));
    }

    #[test]
    fn a_profile_with_one_fold_is_held_out_at_the_roofline() {
        let mut list = runs();
        list[1].profile = "a100-ib200".into();
        let held = held_out(&list, Params::ScaleAndGap, Grouping::Profile).unwrap();
        assert!(held.iter().all(|h| h.calibration.is_identity()), "{held:?}");
        let fitted = per_group(&list, Params::Scale, Grouping::Profile).unwrap();
        assert_eq!(fitted.len(), 2);
        let scale = fitted[0].calibration.compute_scale;
        assert!((scale - 1.3).abs() < 0.005, "{fitted:?}");
    }
}
