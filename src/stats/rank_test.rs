//! The Mann-Whitney U test (Wilcoxon rank-sum) of two sets of samples: whether one tends to be
//! larger than the other, with no assumption on their distribution. Two-sided p-value from the
//! normal approximation with the tie correction and a continuity correction (Hollander & Wolfe,
//! Nonparametric Statistical Methods, 3rd ed., section 4.1), as R's `wilcox.test(exact = FALSE,
//! correct = TRUE)` and SciPy's `mannwhitneyu(method="asymptotic")` compute it.

/// Fewest samples per side the normal approximation is used with.
pub const MIN_SAMPLES: usize = 5;

/// The two-sided p-value of the hypothesis that `a` and `b` come from one distribution;
/// `None` with fewer than [`MIN_SAMPLES`] finite samples on a side.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let a: Vec<f64> = a.iter().copied().filter(|x| x.is_finite()).collect();
    let b: Vec<f64> = b.iter().copied().filter(|x| x.is_finite()).collect();
    if a.len() < MIN_SAMPLES || b.len() < MIN_SAMPLES {
        return None;
    }
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let (rank_sum_a, ties) = ranks_of_first(&a, &b);
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        // Every sample equal: nothing tells the two apart.
        return Some(1.0);
    }
    let d = (u - mean).abs();
    let z = (d - 0.5).max(0.0) / var.sqrt();
    Some((2.0 * normal_sf(z)).min(1.0))
}

/// The sum of the mid-ranks of `a`'s samples in `a ∪ b`, and the tie term `Σ (t³ − t)`.
fn ranks_of_first(a: &[f64], b: &[f64]) -> (f64, f64) {
    let mut all: Vec<(f64, bool)> = a.iter().map(|&x| (x, true)).collect();
    all.extend(b.iter().map(|&x| (x, false)));
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut sum, mut ties, mut i) = (0.0, 0.0, 0);
    while i < all.len() {
        let j = i + all[i..].iter().take_while(|x| x.0 == all[i].0).count();
        // Ranks i+1..=j shared: each gets their mean.
        let mid = (i + 1 + j) as f64 / 2.0;
        sum += mid * all[i..j].iter().filter(|x| x.1).count() as f64;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    (sum, ties)
}

/// `P(Z > z)` for a standard normal `Z`: `erfc(z / √2) / 2`.
pub fn normal_sf(z: f64) -> f64 {
    erfc(z / std::f64::consts::SQRT_2) / 2.0
}

/// The complementary error function, by the Chebyshev fit of Numerical Recipes (Press et al.,
/// 2nd ed., section 6.2, `erfcc`): fractional error below 1.2e-7 everywhere.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_tail_matches_tables() {
        // Standard normal upper tail: 0.5 at 0, 0.0228 at 2, 0.00135 at 3, 0.975 at -1.96.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.max(1e-3);
        assert!(close(normal_sf(0.0), 0.5));
        assert!(close(normal_sf(1.959_964), 0.025));
        assert!(close(normal_sf(2.0), 0.022_750_13));
        assert!(close(normal_sf(3.0), 0.001_349_898));
        assert!(close(normal_sf(-1.959_964), 0.975));
    }

    #[test]
    // 3.14 is a measurement of the data set, not an approximation of pi.
    #[allow(clippy::approx_constant)]
    fn p_values_match_r_and_scipy() {
        // R: wilcox.test(c(1.83,0.50,1.62,2.48,1.68,1.88,1.55,3.06,1.30),
        //                c(0.878,0.647,0.598,2.05,1.06,1.29,1.06,3.14,1.29), exact=FALSE)
        // W = 58, p-value = 0.1329 (the depression data of Hollander & Wolfe, ties in y).
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];
        let p = mann_whitney_p(&x, &y).unwrap();
        assert!((p - 0.1329).abs() < 5e-4, "{p}");
        // Fully separated samples of 10: W = 0, z = 49.5 / √175, p = 0.00018267 (R, exact =
        // FALSE).
        let lo: Vec<f64> = (0..10).map(f64::from).collect();
        let hi: Vec<f64> = (10..20).map(f64::from).collect();
        let p = mann_whitney_p(&lo, &hi).unwrap();
        assert!((p - 0.000_182_67).abs() < 1e-8, "{p}");
        assert_eq!(mann_whitney_p(&lo, &hi), mann_whitney_p(&hi, &lo));
    }

    #[test]
    fn too_few_or_identical_samples() {
        assert_eq!(mann_whitney_p(&[1.0; 4], &[2.0; 10]), None);
        assert_eq!(mann_whitney_p(&[1.0; 6], &[1.0; 6]), Some(1.0));
        let with_nan = [1.0, 2.0, 3.0, 4.0, f64::NAN];
        assert_eq!(mann_whitney_p(&with_nan, &[1.0; 9]), None);
    }
}
