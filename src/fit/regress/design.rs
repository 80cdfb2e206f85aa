//! The observations rescaled to their group's median (the relative scale every fit works on), and
//! the quality of a fit judged against those medians.

use super::*;

/// The observations on the relative scale of their group: row `z_i = x_i / m_g` and target
/// `t_i = y_i / m_g`, `m_g` the median of the row's group, so that the relative residual of
/// parameters `p` is `t_i − z_i · p = (y_i − x_i · p)/m_g` and the relative loss is ordinary least
/// squares of `t` on `z`.
pub(super) struct Design {
    pub(super) k: usize,
    pub(super) z: Vec<Vec<f64>>,
    pub(super) t: Vec<f64>,
    /// Dense group index (0..G, ascending group) of each row.
    pub(super) group: Vec<usize>,
    /// 1/n_g of each row.
    pub(super) base: Vec<f64>,
    /// (group, median y) and the features of each group's first sample, ascending group.
    pub(super) medians: Vec<(usize, f64)>,
    pub(super) group_x: Vec<Vec<f64>>,
}

impl Design {
    pub(super) fn new(obs: &[Obs]) -> Result<Design, FitError> {
        let k = obs.first().ok_or(FitError::NonFinite)?.x.len();
        let bad = |o: &Obs| {
            !(o.y > 0.0 && o.y.is_finite()) || o.x.len() != k || o.x.iter().any(|x| !x.is_finite())
        };
        if obs.iter().any(bad) {
            return Err(FitError::NonFinite);
        }
        if k == 0 {
            return Err(FitError::Singular);
        }
        let medians = group_medians(obs);
        let index = |o: &Obs| medians.partition_point(|&(g, _)| g < o.group);
        let group: Vec<usize> = obs.iter().map(index).collect();
        let mut count = vec![0usize; medians.len()];
        let mut group_x = vec![Vec::new(); medians.len()];
        for (o, &g) in obs.iter().zip(&group) {
            if count[g] == 0 {
                group_x[g] = o.x.clone();
            }
            count[g] += 1;
        }
        let scale = |g: usize| medians[g].1;
        let z: Vec<Vec<f64>> = obs
            .iter()
            .zip(&group)
            .map(|(o, &g)| o.x.iter().map(|x| x / scale(g)).collect())
            .collect();
        let t: Vec<f64> = obs
            .iter()
            .zip(&group)
            .map(|(o, &g)| o.y / scale(g))
            .collect();
        if z.iter().flatten().chain(&t).any(|v| !v.is_finite()) {
            return Err(FitError::NonFinite);
        }
        let base = group.iter().map(|&g| 1.0 / count[g] as f64).collect();
        Ok(Design {
            k,
            z,
            t,
            group,
            base,
            medians,
            group_x,
        })
    }

    /// Relative residuals `(y − ŷ)/m_g` of every row.
    pub(super) fn residuals(&self, params: &[f64]) -> Vec<f64> {
        let row = |(z, t): (&Vec<f64>, &f64)| t - dot(z, params);
        self.z.iter().zip(&self.t).map(row).collect()
    }
}

/// (R², mean and max relative error) of `params` against the group medians.
pub(super) fn quality(d: &Design, params: &[f64]) -> (f64, f64, f64) {
    let pairs = d.medians.iter().zip(&d.group_x);
    let rel: Vec<f64> = pairs.map(|(&(_, m), x)| (dot(x, params) - m) / m).collect();
    let g = rel.len() as f64;
    let mean = rel.iter().map(|r| r.abs()).sum::<f64>() / g;
    let max = rel.iter().map(|r| r.abs()).fold(0.0, f64::max);
    // w = 1/m², so Σ w (m − ŷ)² = Σ rel² and Σ w m = Σ 1/m.
    let ss_res: f64 = rel.iter().map(|r| r * r).sum();
    let inv: Vec<f64> = d.medians.iter().map(|&(_, m)| 1.0 / m).collect();
    let mean_w = inv.iter().sum::<f64>() / inv.iter().map(|i| i * i).sum::<f64>();
    let ss_tot: f64 = inv.iter().map(|i| (1.0 - mean_w * i).powi(2)).sum();
    let r2 = if rel.len() > 1 && ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else if ss_res <= g * NOISE_FLOOR * NOISE_FLOOR {
        1.0
    } else {
        0.0
    };
    (r2, mean, max)
}
