//! Robust, relative-error linear regression with cluster-robust confidence intervals.
//!
//! Every model in `fit` is linear in its parameters: a time `y` (µs) ≈ `params · x`, the features
//! `x` computed from the message size and world size (`[1, bytes]` for alpha-beta,
//! `[p − 1, (p − 1)/p · bytes]` for a ring, …). [`fit`] estimates the parameters from
//! per-iteration samples, each tagged with the `group` (message size or world size) it was measured
//! in. Four choices make the estimate suit timing data:
//!
//! * **Relative error.** Times span several decades (microseconds at 8 B, milliseconds at 64 MiB)
//!   and their noise is multiplicative. Ordinary least squares would let the largest sizes decide
//!   everything, alpha included. Each sample is weighted by `1/m_g²` instead, `m_g` the median of
//!   its group, so the loss is the sum of squared relative residuals `r = (y − ŷ)/m_g`: a 1% miss
//!   costs the same at every size. The scale is the group's median, not the sample's own `y`:
//!   weighting by `1/y²` would give a sample 30% faster than its group twice the weight of the
//!   others (and measure its miss on a smaller scale), so one lucky iteration would pull the line
//!   below the size's typical time; with `1/m_g²` every sample of a size weighs the same, and a
//!   sample 30% fast pulls exactly as hard as one 30% slow.
//! * **Every group counts equally.** Each sample is also weighted by `1/n_g`, `n_g` the number of
//!   samples in its group, so a size measured 1000 times does not outvote one measured 20 times:
//!   in all, a sample weighs `1/(m_g²·n_g)` (times its Huber weight below), and every group
//!   `1/m_g²`.
//! * **Robustness.** Samples have outliers (preemption, a late rank, a page fault). The fit is a
//!   Huber M-estimate by iteratively reweighted least squares, started from the plain fit: with
//!   `s` = 1.4826 × the MAD of the relative residuals (re-estimated every iteration), a sample with
//!   `|r| > huber_k·s` gets weight `huber_k·s/|r|`, so it pulls linearly instead of quadratically.
//!   (Its pull is capped, not cancelled: with 2% noise, 5% of samples 3× slow still raise the
//!   estimate by about 0.2%. `collbench fit` drops each size's slower half before fitting.)
//!   When `s` is at rounding level (< 1e-12: noise-free data, or more than half the samples fitted
//!   exactly) the iteration stops, keeping the weights of the current fit (all 1 at the start).
//! * **Non-negativity.** Latencies and inverse bandwidths cannot be negative, but noise can make an
//!   estimate so (a true alpha of ~0 comes out as −0.1 µs). With `nonnegative`, when a parameter
//!   comes out negative every subset of parameters held at zero is tried, fewest first, and the
//!   feasible robust fit with the lowest Huber loss (at the unconstrained fit's scale) is kept.
//!   Held parameters are reported in `held_at_zero`, with value 0, standard error 0 and interval
//!   (0, 0). (Beyond 10 parameters the subsets are too many; the most negative parameter is held,
//!   one at a time, until none is negative.)
//!
//! **Uncertainty.** The samples of one group are not independent: they share a launch, its
//! placement, clocks and contention, so their errors are correlated, and counting 24 sizes × 50
//! samples as 1200 independent points would give intervals far too narrow. The covariance is the
//! cluster-robust sandwich of Liang and Zeger with the CR1 small-sample factor, one cluster per
//! group: `G/(G − k) · B M B`, `B = (XᵀWX)⁻¹`, `M = Σ_g s_g s_gᵀ`,
//! `s_g = Σ_{i∈g} w_i x_i (y_i − ŷ_i)`, with `W` the final weights (`1/m_g²` × `1/n_g` × Huber),
//! `G` the groups and `k` the free parameters. Intervals use Student's t with `G − k` degrees of
//! freedom, so a fit needs at least `k + 1` groups, and a curve of five sizes gets honestly wide
//! intervals however many samples each size has. Noise-free data give a covariance of zero (up to
//! rounding).
//!
//! **Quality** is judged per group against the group's median, the number a report shows:
//! `rel_err_mean`/`rel_err_max` are the mean and max of `|ŷ(x_g) − median_g|/median_g`, and `r2`
//! is R² over the medians weighted by `1/median²` (the relative scale again). With a single group,
//! or medians all equal (a zero denominator), `r2` is 1 when the residual is zero (relative RMS
//! below 1e-12) and 0 otherwise.
//!
//! **Numerics.** The k × k normal equations are solved by Gaussian elimination with partial
//! pivoting after scaling every column to unit weighted norm (a bytes column reaches 1e10 while an
//! intercept column is 1); a pivot below 1e-12 of that unit diagonal means the features do not
//! determine the parameters ([`FitError::Singular`]). Nothing here panics on any input.

use std::collections::BTreeMap;

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::stats::median;

/// One observation: features `x` (one per parameter), the measured time `y` (> 0, microseconds),
/// and the `group` it was measured in (the index of its message size, or of its world size), so
/// that samples of one group can be weighted, clustered and held out together.
#[derive(Clone, Debug, PartialEq)]
pub struct Obs {
    pub x: Vec<f64>,
    pub y: f64,
    pub group: usize,
}

/// How a fit is made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RobustOptions {
    /// Huber tuning constant on standardized relative residuals (1.345: 95% efficiency).
    pub huber_k: f64,
    /// IRLS iteration limit.
    pub max_iter: usize,
    /// Convergence tolerance on the relative change of the parameters.
    pub tol: f64,
    /// Confidence level of the intervals (0.95).
    pub confidence: f64,
    /// Hold parameters that come out negative at zero (alpha and beta cannot be negative).
    pub nonnegative: bool,
}

impl Default for RobustOptions {
    fn default() -> Self {
        RobustOptions {
            huber_k: 1.345,
            max_iter: 50,
            tol: 1e-10,
            confidence: 0.95,
            nonnegative: true,
        }
    }
}

/// Why a fit could not be made.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error("too few distinct groups: {have} (need at least {need})")]
    TooFewGroups { need: usize, have: usize },
    #[error("the features do not determine the parameters (singular design)")]
    Singular,
    #[error("a time or feature is not a finite positive number")]
    NonFinite,
}

/// A fitted linear model `y = params · x`.
#[derive(Clone, Debug, PartialEq)]
pub struct LinearFit {
    pub params: Vec<f64>,
    /// Standard errors (cluster-robust, clusters = groups).
    pub stderr: Vec<f64>,
    /// Confidence intervals at `RobustOptions::confidence`.
    pub ci: Vec<(f64, f64)>,
    /// Parameter covariance (cluster-robust), k × k.
    pub covariance: Vec<Vec<f64>>,
    /// Observations (samples) used.
    pub n: usize,
    /// Distinct groups.
    pub groups: usize,
    /// Degrees of freedom of the t quantile: groups − free parameters.
    pub dof: usize,
    /// The t quantile the intervals use.
    pub t_quantile: f64,
    /// R² over the group medians, weighted by 1/median² (relative scale).
    pub r2: f64,
    /// Mean and max of |prediction − median| / median over the groups.
    pub rel_err_mean: f64,
    pub rel_err_max: f64,
    /// IRLS iterations taken.
    pub iterations: usize,
    /// Samples whose final Huber weight is below 1 (treated as outliers, down-weighted).
    pub downweighted: usize,
    /// Parameters held at zero by the non-negativity constraint.
    pub held_at_zero: Vec<bool>,
}

/// A held-out group's prediction error.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Holdout {
    pub group: usize,
    /// |prediction − median| / median of the held-out group, the model refitted without it.
    pub rel_err: f64,
}

/// Fits `y ≈ params · x` minimising relative error, robustly. See the module docs.
pub fn fit(obs: &[Obs], opts: &RobustOptions) -> Result<LinearFit, FitError> {
    let d = Design::new(obs)?;
    let groups = d.medians.len();
    if groups < d.k + 1 {
        return Err(FitError::TooFewGroups {
            need: d.k + 1,
            have: groups,
        });
    }
    let unconstrained = robust(&d, &vec![false; d.k], opts)?;
    let (rob, held) = constrain(&d, opts, unconstrained);
    let free = held.iter().filter(|h| !**h).count();
    let dof = groups - free;
    let covariance = covariance(&d, &rob, &held)?;
    let t = t_quantile(opts.confidence, dof);
    let stderr: Vec<f64> = (0..d.k).map(|j| covariance[j][j].max(0.0).sqrt()).collect();
    let ci = rob.params.iter().zip(&stderr);
    let ci = ci.map(|(&p, &s)| {
        if s == 0.0 {
            (p, p)
        } else {
            (p - t * s, p + t * s)
        }
    });
    let (r2, rel_err_mean, rel_err_max) = quality(&d, &rob.params);
    Ok(LinearFit {
        ci: ci.collect(),
        stderr,
        covariance,
        n: obs.len(),
        groups,
        dof,
        t_quantile: t,
        r2,
        rel_err_mean,
        rel_err_max,
        iterations: rob.iterations,
        downweighted: rob.huber.iter().filter(|h| **h < 1.0).count(),
        held_at_zero: held,
        params: rob.params,
    })
}

/// The model's prediction at `x` and the standard error of that (mean) prediction.
pub fn predict(fit: &LinearFit, x: &[f64]) -> (f64, f64) {
    let y = fit.params.iter().zip(x).map(|(p, x)| p * x).sum();
    let mut var = 0.0;
    for (i, xi) in x.iter().enumerate() {
        for (j, xj) in x.iter().enumerate() {
            var += xi * fit.covariance[i][j] * xj;
        }
    }
    (y, var.max(0.0).sqrt())
}

/// Refits without each group in turn and reports how well the rest predicts it.
///
/// Needs `k + 2` groups, so that every refit still has the `k + 1` that [`fit`] needs; fails with
/// the first refit that fails (a group whose removal leaves the design singular, say).
pub fn leave_one_group_out(obs: &[Obs], opts: &RobustOptions) -> Result<Vec<Holdout>, FitError> {
    let d = Design::new(obs)?;
    let groups = d.medians.len();
    if groups < d.k + 2 {
        return Err(FitError::TooFewGroups {
            need: d.k + 2,
            have: groups,
        });
    }
    let holdout = |g: usize| {
        let (group, median) = d.medians[g];
        let rest: Vec<Obs> = obs.iter().filter(|o| o.group != group).cloned().collect();
        let refit = fit(&rest, opts)?;
        let rel_err = ((dot(&d.group_x[g], &refit.params) - median) / median).abs();
        Ok(Holdout { group, rel_err })
    };
    held_out_groups(groups).into_iter().map(holdout).collect()
}

/// Most groups each held out in turn; beyond, that many evenly spaced ones are, so that the cost
/// stays linear in the observations (a log with thousands of sizes needed one fit per size).
pub const MAX_HOLDOUTS: usize = 64;

/// The indices of the groups held out: all of `groups` up to [`MAX_HOLDOUTS`], else that many
/// evenly spaced from the first to the last.
fn held_out_groups(groups: usize) -> Vec<usize> {
    if groups <= MAX_HOLDOUTS {
        return (0..groups).collect();
    }
    let mut out: Vec<usize> = (0..MAX_HOLDOUTS)
        .map(|k| k * (groups - 1) / (MAX_HOLDOUTS - 1))
        .collect();
    out.dedup();
    out
}

/// The median time of each group, in group order (for reports and R²).
pub fn group_medians(obs: &[Obs]) -> Vec<(usize, f64)> {
    let mut by_group: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for o in obs {
        by_group.entry(o.group).or_default().push(o.y);
    }
    let median_of = |(group, mut ys): (usize, Vec<f64>)| {
        ys.sort_by(f64::total_cmp);
        (group, median(&ys))
    };
    by_group.into_iter().map(median_of).collect()
}

/// Robust scale (relative) below which the data count as noise-free.
const NOISE_FLOOR: f64 = 1e-12;
/// The MAD of normal data times this estimates its standard deviation.
const MAD_TO_SD: f64 = 1.4826;
/// Smallest pivot of the unit-diagonal normal matrix; below it the design is singular.
const MIN_PIVOT: f64 = 1e-12;
/// Most parameters for which every subset is tried for non-negativity.
const MAX_SUBSET_PARAMS: usize = 10;

mod design;
mod numerics;
mod robust;
use design::*;
use numerics::*;
use robust::*;

#[cfg(test)]
mod tests;
