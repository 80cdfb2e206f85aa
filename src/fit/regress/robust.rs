//! The Huber IRLS iteration and the non-negativity constraint: which parameters are held at zero,
//! and the robust fit of the rest.

use super::*;

/// A (possibly robust) weighted fit with some parameters held at zero.
pub(super) struct Robust {
    pub(super) params: Vec<f64>,
    /// Final weights: 1/n_g × Huber (the 1/m_g² is inside `Design::z` and `Design::t`).
    pub(super) weights: Vec<f64>,
    pub(super) huber: Vec<f64>,
    pub(super) iterations: usize,
    /// Huber threshold on |r| of the last iteration; infinite when no robust step was taken.
    pub(super) cut: f64,
}

/// Huber IRLS over the parameters not `held` (which stay 0), from the plain relative fit.
pub(super) fn robust(d: &Design, held: &[bool], opts: &RobustOptions) -> Result<Robust, FitError> {
    let mut fit = Robust {
        params: wls(d, &d.base, held)?,
        weights: d.base.clone(),
        huber: vec![1.0; d.z.len()],
        iterations: 0,
        cut: f64::INFINITY,
    };
    while opts.huber_k > 0.0 && fit.iterations < opts.max_iter {
        let r = d.residuals(&fit.params);
        let scale = MAD_TO_SD * mad(&r);
        if scale.is_nan() || scale <= NOISE_FLOOR {
            break; // (Near) noise-free: the current fit is exact where it matters.
        }
        fit.cut = opts.huber_k * scale;
        fit.huber = r.iter().map(|r| (fit.cut / r.abs()).min(1.0)).collect();
        fit.weights = d.base.iter().zip(&fit.huber).map(|(b, h)| b * h).collect();
        let next = wls(d, &fit.weights, held)?;
        fit.iterations += 1;
        let change = max_relative_change(&fit.params, &next);
        fit.params = next;
        if change < opts.tol {
            break;
        }
    }
    Ok(fit)
}

/// Applies non-negativity: the unconstrained fit if allowed and feasible, else the best feasible
/// fit over the subsets of parameters held at zero. Returns the fit and the held parameters.
pub(super) fn constrain(
    d: &Design,
    opts: &RobustOptions,
    unconstrained: Robust,
) -> (Robust, Vec<bool>) {
    if !opts.nonnegative || unconstrained.params.iter().all(|p| *p >= 0.0) {
        return (unconstrained, vec![false; d.k]);
    }
    if d.k > MAX_SUBSET_PARAMS {
        return hold_greedily(d, opts, unconstrained);
    }
    let mut subsets: Vec<Vec<bool>> = (1u32..1 << d.k)
        .map(|mask| (0..d.k).map(|j| mask >> j & 1 == 1).collect())
        .collect();
    subsets.sort_by_key(|held| held.iter().filter(|h| **h).count()); // Stable: fewest first.
    let mut best: Option<(f64, Robust, Vec<bool>)> = None;
    for held in subsets {
        let Ok(fit) = robust(d, &held, opts) else {
            continue;
        };
        if fit.params.iter().all(|p| *p >= 0.0) {
            let loss = huber_loss(d, &fit.params, unconstrained.cut);
            if best.as_ref().map_or(true, |b| loss < b.0) {
                best = Some((loss, fit, held));
            }
        }
    }
    // Holding every parameter (all zero) is always feasible, so `best` is always set.
    best.map_or_else(
        || hold_greedily(d, opts, unconstrained),
        |(_, fit, held)| (fit, held),
    )
}

/// Non-negativity for many parameters: holds the most negative one at zero until none is.
pub(super) fn hold_greedily(
    d: &Design,
    opts: &RobustOptions,
    mut fit: Robust,
) -> (Robust, Vec<bool>) {
    let mut held = vec![false; d.k];
    let most_negative = |p: &[f64]| {
        (0..d.k)
            .filter(|&j| p[j] < 0.0)
            .min_by(|&a, &b| p[a].total_cmp(&p[b]))
    };
    while let Some(j) = most_negative(&fit.params) {
        held[j] = true;
        fit.params[j] = 0.0;
        match robust(d, &held, opts) {
            Ok(next) => fit = next,
            Err(_) => break,
        }
    }
    (fit, held)
}

/// Σ ρ(r_i)/n_g, ρ the Huber loss with threshold `cut` (squared loss when infinite).
fn huber_loss(d: &Design, params: &[f64], cut: f64) -> f64 {
    let rho = |r: f64| {
        let a = r.abs();
        if a <= cut {
            a * a / 2.0
        } else {
            cut * a - cut * cut / 2.0
        }
    };
    d.residuals(params)
        .iter()
        .zip(&d.base)
        .map(|(r, b)| b * rho(*r))
        .sum()
}
