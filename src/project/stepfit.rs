//! The empirical scaling law of the scaling-efficiency primer, `T(N) = a + b·N + c·ln N`,
//! fitted by least squares to one layout's projected step times, and validated the way the
//! cross-world models are: fitted again without the largest world, it predicts that world and
//! carries the relative error of that prediction. Pure.

use serde::Serialize;

/// Worlds a fit needs: three to determine `a`, `b`, `c` and the largest held out.
pub const MIN_WORLDS: usize = 4;

/// `T(N) = a_s + b_s_per_gpu·N + c_s·ln N` and its held-out check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StepFit {
    pub a_s: f64,
    pub b_s_per_gpu: f64,
    pub c_s: f64,
    /// World sizes fitted (all projected worlds of the layout).
    pub worlds: usize,
    /// The largest world, left out of the check fit.
    pub held_out_world: usize,
    /// What the fit without `held_out_world` predicts there, s.
    pub held_out_predicted_s: f64,
    /// The projected step time there, s.
    pub held_out_projected_s: f64,
    /// `(held_out_predicted_s − held_out_projected_s) / held_out_projected_s`.
    pub held_out_rel_error: f64,
}

impl StepFit {
    /// The fitted step time at `n` GPUs, s.
    pub fn at(&self, n: f64) -> f64 {
        eval((self.a_s, self.b_s_per_gpu, self.c_s), n)
    }
}

fn eval((a, b, c): (f64, f64, f64), n: f64) -> f64 {
    a + b * n + c * n.ln()
}

/// Fits `(world, step time)` points in any order; why not when there are fewer than
/// [`MIN_WORLDS`] distinct worlds or the points determine no fit.
pub fn step_fit(points: &[(usize, f64)]) -> Result<StepFit, String> {
    let mut pts: Vec<(f64, f64)> = points.iter().map(|&(n, t)| (n as f64, t)).collect();
    pts.sort_by(|x, y| x.0.total_cmp(&y.0));
    pts.dedup_by(|x, y| x.0 == y.0);
    if pts.len() < MIN_WORLDS {
        return Err(format!(
            "{} projected world size(s), {MIN_WORLDS} needed (3 to fit, the largest held out)",
            pts.len()
        ));
    }
    let singular = || "the world sizes determine no fit".to_string();
    let all = least_squares(&pts).ok_or_else(singular)?;
    let Some((last, rest)) = pts.split_last() else {
        return Err(singular());
    };
    let check = least_squares(rest).ok_or_else(singular)?;
    let predicted = eval(check, last.0);
    Ok(StepFit {
        a_s: all.0,
        b_s_per_gpu: all.1,
        c_s: all.2,
        worlds: pts.len(),
        held_out_world: last.0 as usize,
        held_out_predicted_s: predicted,
        held_out_projected_s: last.1,
        held_out_rel_error: (predicted - last.1) / last.1,
    })
}

/// Least-squares `(a, b, c)` of `t = a + b·n + c·ln n`; `None` when singular. The columns are
/// scaled by the largest n (`n/m`, `ln(n/m)`) so the normal equations stay well conditioned.
pub fn least_squares(pts: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let m = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    if pts.len() < 3 || m <= 0.0 || pts.iter().any(|p| p.0 <= 0.0) {
        return None;
    }
    let mut ata = [[0.0; 3]; 3];
    let mut atb = [0.0; 3];
    for &(n, t) in pts {
        let row = [1.0, n / m, (n / m).ln()];
        for i in 0..3 {
            for j in 0..3 {
                ata[i][j] += row[i] * row[j];
            }
            atb[i] += row[i] * t;
        }
    }
    let [a, b, c] = solve3(ata, atb)?;
    // t = a + b·(n/m) + c·(ln n − ln m).
    Some((a - c * m.ln(), b / m, c))
}

/// Gaussian elimination with partial pivoting; `None` when a pivot vanishes.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    let scale = a.iter().flatten().fold(0.0f64, |s, x| s.max(x.abs()));
    for col in 0..3 {
        let piv = (col..3).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        let p = a[piv][col].abs();
        if p.is_nan() || p <= 1e-12 * scale {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        for r in col + 1..3 {
            let (pivot_row, f) = (a[col], a[r][col] / a[col][col]);
            for (x, p) in a[r][col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
            b[r] -= f * b[col];
        }
    }
    let mut x = [0.0; 3];
    for r in (0..3).rev() {
        let s: f64 = (r + 1..3).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-30)
    }

    #[test]
    fn exact_data_recovers_a_b_c() {
        let (a, b, c) = (0.4, 2.5e-4, 0.012);
        let pts: Vec<(usize, f64)> = (3..=11)
            .map(|k| 1usize << k)
            .map(|n| (n, a + b * n as f64 + c * (n as f64).ln()))
            .collect();
        let f = step_fit(&pts).unwrap();
        assert!(close(f.a_s, a, 1e-9), "{f:?}");
        assert!(close(f.b_s_per_gpu, b, 1e-9), "{f:?}");
        assert!(close(f.c_s, c, 1e-9), "{f:?}");
        assert_eq!((f.worlds, f.held_out_world), (9, 2048));
        assert!(f.held_out_rel_error.abs() < 1e-9, "{f:?}");
        assert!(close(
            f.at(4096.0),
            a + b * 4096.0 + c * 4096f64.ln(),
            1e-12
        ));
    }

    #[test]
    fn held_out_error_by_hand() {
        // T(1) = 1, T(2) = 2, T(4) = 4: a + b = 1, a + 2b + c·ln 2 = 2, a + 4b + 2c·ln 2 = 4
        // give b = 1, c = 0, a = 0, so the fit predicts T(8) = 8 against 10 projected: −20%.
        let f = step_fit(&[(4, 4.0), (1, 1.0), (8, 10.0), (2, 2.0)]).unwrap();
        assert_eq!(f.held_out_world, 8);
        assert!(close(f.held_out_predicted_s, 8.0, 1e-12), "{f:?}");
        assert_eq!(f.held_out_projected_s, 10.0);
        assert!(close(f.held_out_rel_error, -0.2, 1e-12), "{f:?}");
        // T = 1 + ln N on 1, 2, 4 gives a = 1, b = 0, c = 1: T(8) = 1 + 3 ln 2 exactly.
        let l = 2f64.ln();
        let g = step_fit(&[
            (1, 1.0),
            (2, 1.0 + l),
            (4, 1.0 + 2.0 * l),
            (8, 1.0 + 3.0 * l),
        ]);
        let g = g.unwrap();
        assert!(g.held_out_rel_error.abs() < 1e-12, "{g:?}");
        assert!(
            g.b_s_per_gpu.abs() < 1e-12 && close(g.c_s, 1.0, 1e-12),
            "{g:?}"
        );
    }

    #[test]
    fn fewer_than_four_worlds_are_refused() {
        let e = step_fit(&[(8, 1.0), (16, 1.1), (32, 1.2)]).unwrap_err();
        assert!(e.contains("3 projected world size(s), 4 needed"), "{e}");
        // A repeated world counts once.
        let e = step_fit(&[(8, 1.0), (8, 1.0), (16, 1.1), (32, 1.2)]).unwrap_err();
        assert!(e.starts_with("3 projected"), "{e}");
        assert!(step_fit(&[]).is_err());
    }

    #[test]
    fn degenerate_points_determine_no_fit() {
        assert_eq!(least_squares(&[(0.0, 1.0), (1.0, 1.0), (2.0, 1.0)]), None);
        assert_eq!(least_squares(&[(1.0, 1.0), (2.0, 1.0)]), None);
        assert_eq!(least_squares(&[(2.0, 1.0), (2.0, 1.0), (2.0, 1.0)]), None);
    }
}
