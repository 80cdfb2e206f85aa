//! The numerics under [`super::fit`]: weighted normal equations scaled to unit column norm,
//! Gaussian elimination with partial pivoting, the cluster-robust covariance, Student-t
//! quantiles, and the order statistics the Huber scale needs.

use super::*;

/// The weighted normal equations of the free columns, each column scaled to unit weighted norm.
pub(super) struct Normal {
    pub(super) cols: Vec<usize>,
    pub(super) scale: Vec<f64>,
    pub(super) matrix: Vec<Vec<f64>>,
}

pub(super) fn normal(d: &Design, w: &[f64], held: &[bool]) -> Result<Normal, FitError> {
    let cols: Vec<usize> = (0..d.k).filter(|&j| !held[j]).collect();
    let cross = |a: usize, b: usize| d.z.iter().zip(w).map(|(z, w)| w * z[a] * z[b]).sum::<f64>();
    let scale: Vec<f64> = cols.iter().map(|&j| cross(j, j).sqrt()).collect();
    if scale.iter().any(|c| !(c.is_finite() && *c > 0.0)) {
        return Err(FitError::Singular);
    }
    let row = |(&a, ca): (&usize, &f64)| {
        let entry = |(&b, cb): (&usize, &f64)| cross(a, b) / (ca * cb);
        cols.iter().zip(&scale).map(entry).collect()
    };
    let matrix = cols.iter().zip(&scale).map(row).collect();
    Ok(Normal {
        cols,
        scale,
        matrix,
    })
}

/// Weighted least squares of the relative residuals, `held` parameters fixed at 0: minimises
/// Σ w_i (t_i − z_i·p)².
pub(super) fn wls(d: &Design, w: &[f64], held: &[bool]) -> Result<Vec<f64>, FitError> {
    let n = normal(d, w, held)?;
    let rows = || d.z.iter().zip(&d.t).zip(w);
    let rhs_of = |(&j, c): (&usize, &f64)| rows().map(|((z, t), w)| w * z[j] * t).sum::<f64>() / c;
    let rhs = n.cols.iter().zip(&n.scale).map(rhs_of).collect();
    let beta = solve(n.matrix, rhs).ok_or(FitError::Singular)?;
    let mut params = vec![0.0; d.k];
    for ((&j, b), c) in n.cols.iter().zip(beta).zip(&n.scale) {
        params[j] = b / c;
    }
    Ok(params)
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting; `None` when a pivot is below
/// [`MIN_PIVOT`] (or not a number).
pub(super) fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        let size = a[pivot][col].abs();
        if size.is_nan() || size < MIN_PIVOT {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let (top, rest) = a.split_at_mut(col + 1);
        let (p, bp) = (&top[col], b[col]);
        for (row, bi) in rest.iter_mut().zip(b.iter_mut().skip(col + 1)) {
            let f = row[col] / p[col];
            row.iter_mut()
                .zip(p)
                .skip(col)
                .for_each(|(r, p)| *r -= f * p);
            *bi -= f * bp;
        }
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let known: f64 = a[i].iter().zip(&x).skip(i + 1).map(|(a, x)| a * x).sum();
        x[i] = (b[i] - known) / a[i][i];
    }
    Some(x)
}

/// The inverse of the symmetric `a` (so its columns are its rows), by [`solve`] on unit vectors.
pub(super) fn invert(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let unit = |j: usize| (0..a.len()).map(|i| f64::from(u8::from(i == j))).collect();
    (0..a.len()).map(|j| solve(a.to_vec(), unit(j))).collect()
}

/// The CR1 cluster-robust covariance (clusters = groups) of `fit`, k × k, zero for held
/// parameters. Computed in the scaled coordinates of [`normal`] and scaled back.
pub(super) fn covariance(
    d: &Design,
    fit: &Robust,
    held: &[bool],
) -> Result<Vec<Vec<f64>>, FitError> {
    let n = normal(d, &fit.weights, held)?;
    let kf = n.cols.len();
    let groups = d.medians.len();
    let mut scores = vec![vec![0.0; kf]; groups];
    for (i, r) in d.residuals(&fit.params).into_iter().enumerate() {
        let score = scores[d.group[i]].iter_mut();
        for (s, (&j, c)) in score.zip(n.cols.iter().zip(&n.scale)) {
            *s += fit.weights[i] * d.z[i][j] / c * r;
        }
    }
    let bread = invert(&n.matrix).ok_or(FitError::Singular)?;
    let meat = |a: usize, b: usize| scores.iter().map(|s| s[a] * s[b]).sum::<f64>();
    let meat: Vec<Vec<f64>> = (0..kf)
        .map(|a| (0..kf).map(|b| meat(a, b)).collect())
        .collect();
    let factor = groups as f64 / (groups - kf) as f64;
    let mut cov = vec![vec![0.0; d.k]; d.k];
    for (a, &ja) in n.cols.iter().enumerate() {
        for (b, &jb) in n.cols.iter().enumerate() {
            let sandwich = quadratic(&bread[a], &meat, &bread[b]);
            cov[ja][jb] = factor * sandwich / (n.scale[a] * n.scale[b]);
        }
    }
    Ok(cov)
}

/// `u · m · v`.
pub(super) fn quadratic(u: &[f64], m: &[Vec<f64>], v: &[f64]) -> f64 {
    u.iter().zip(m).map(|(u, row)| u * dot(row, v)).sum()
}

/// The two-sided Student-t quantile for `confidence` with `dof` degrees of freedom (0 for
/// confidence ≤ 0, infinite for ≥ 1, NaN for NaN).
pub(super) fn t_quantile(confidence: f64, dof: usize) -> f64 {
    let p = (1.0 + confidence) / 2.0;
    match p {
        _ if p.is_nan() => f64::NAN,
        _ if p >= 1.0 => f64::INFINITY,
        _ if p <= 0.5 => 0.0,
        _ => StudentsT::new(0.0, 1.0, dof as f64).map_or(f64::NAN, |t| t.inverse_cdf(p)),
    }
}

pub(super) use crate::stats::mad_of as mad;

/// max_j |new_j − old_j| / max(|old_j|, |new_j|) (0 where both are 0).
pub(super) fn max_relative_change(old: &[f64], new: &[f64]) -> f64 {
    let change = |(a, b): (&f64, &f64)| {
        let diff = (a - b).abs();
        if diff == 0.0 {
            0.0
        } else {
            diff / a.abs().max(b.abs())
        }
    };
    old.iter().zip(new).map(change).fold(0.0, f64::max)
}

pub(super) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}
