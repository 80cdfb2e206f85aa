//! Hand-computed answers: the relative weighting of samples within a group, R², the
//! cluster-robust covariance and the t intervals.

use super::*;

/// Groups of samples (one per entry) of the one-parameter model `y = b·s`.
fn samples_per_group(groups: &[(f64, &[f64])]) -> Vec<Obs> {
    let rows = groups.iter().enumerate();
    let rows = rows.flat_map(|(group, &(s, ys))| ys.iter().map(move |&y| (group, s, y)));
    rows.map(|(group, s, y)| Obs {
        x: vec![s],
        y,
        group,
    })
    .collect()
}

#[test]
fn a_lucky_fast_sample_pulls_no_harder_than_a_slow_one() {
    // y = b·s at s = 1 with samples 7, 10, 13 (median 10: one 30% fast, one 30% slow) and at
    // s = 2 with 20, 20, 20 (median 20). The medians lie on b = 10.
    let obs = samples_per_group(&[(1.0, &[7.0, 10.0, 13.0]), (2.0, &[20.0, 20.0, 20.0])]);
    // Weights 1/(m²·n): z = s/m = 1/10 for every row, t = y/m = 0.7, 1, 1.3 and 1, 1, 1, each
    // with w = 1/3: b = Σwzt / Σwz² = (1/10 · 3/3 + 1/10 · 3/3) / (1/100 + 1/100) = 10.
    // The robust fit keeps it: the residuals −0.3, 0, 0.3, 0, 0, 0 have a MAD of 0.
    for opts in [plain(), RobustOptions::default()] {
        let f = fit(&obs, &opts).unwrap();
        assert!((f.params[0] - 10.0).abs() < 1e-12, "{:?}", f.params);
        let (at_1, _) = predict(&f, &[1.0]);
        let (at_2, _) = predict(&f, &[2.0]);
        assert!((at_1 - 10.0).abs() < 1e-12 && (at_2 - 20.0).abs() < 1e-11);
    }
    // Weighting each sample by its own 1/y² (weights (m/y)²/n on this design) gave the 7 twice
    // the weight of the 13: b = Σ(1/n)(s/y) / Σ(1/n)(s/y)²
    //   = ((1/7 + 1/10 + 1/13)/3 + 1/10) / ((1/49 + 1/100 + 1/169)/3 + 1/100) = 42770/4577,
    // 6.6% below both medians, even the one at s = 2 that has no scatter at all.
    let d = Design::new(&obs).unwrap();
    let own: Vec<f64> = (d.base.iter().zip(&d.t))
        .map(|(b, t)| b / (t * t))
        .collect();
    let old = wls(&d, &own, &[false]).unwrap();
    assert!((old[0] - 42770.0 / 4577.0).abs() < 1e-12, "{old:?}");
}

#[test]
fn samples_symmetric_about_their_medians_fit_like_the_medians() {
    // The medians of r2_known_answer, (1, 1), (2, 4), (4, 4), each with samples spread evenly
    // about it and in different numbers. With weights 1/(m²·n) a group's rows all have the same
    // z = s/m and mean t = 1, so the normal equations (Σ_g z_g²), the scores
    // (s_g = Σ_i z_g (t_i − z_g b)/n_g = z_g (1 − z_g b)) and hence the parameter, covariance and
    // interval are those of the medians alone: b = 10/9, Cov = 16/729 (interval_known_answer).
    let obs = samples_per_group(&[
        (1.0, &[0.7, 1.0, 1.3]),
        (2.0, &[3.0, 4.0, 5.0, 4.0, 4.0]),
        (4.0, &[4.0]),
    ]);
    let f = fit(&obs, &plain()).unwrap();
    assert!((f.params[0] - 10.0 / 9.0).abs() < 1e-14, "{:?}", f.params);
    assert!((f.covariance[0][0] - 16.0 / 729.0).abs() < 1e-15);
    assert!((f.stderr[0] - 4.0 / 27.0).abs() < 1e-14);
    assert_eq!((f.n, f.groups, f.dof), (9, 3, 2));
    let medians = fit(
        &one_per_group(&[(1.0, 1.0), (2.0, 4.0), (4.0, 4.0)]),
        &plain(),
    )
    .unwrap();
    assert!((f.ci[0].0 - medians.ci[0].0).abs() < 1e-14);
    assert!((f.ci[0].1 - medians.ci[0].1).abs() < 1e-14);
    assert!((f.r2 - medians.r2).abs() < 1e-14);
}

#[test]
fn r2_known_answer() {
    // y = b·s on (s, y) = (1, 1), (2, 4), (4, 4); u = s/y = 1, 1/2, 1.
    // Relative least squares: b = Σu / Σu² = (5/2) / (9/4) = 10/9.
    // Relative residuals 1 − b·u: −1/9, 4/9, −1/9; Σw(m − ŷ)² = Σ rel² = 18/81 = 2/9.
    // w = 1/m² = 1, 1/16, 1/16 (Σw = 9/8); m̄_w = (1 + 4/16 + 4/16) / (9/8) = 4/3.
    // Σw(m − m̄)² = (1/3)² + 2·(1/16)(8/3)² = 1/9 + 8/9 = 1, so R² = 1 − 2/9 = 7/9.
    let f = fit(
        &one_per_group(&[(1.0, 1.0), (2.0, 4.0), (4.0, 4.0)]),
        &plain(),
    )
    .unwrap();
    assert!((f.params[0] - 10.0 / 9.0).abs() < 1e-14);
    assert!((f.r2 - 7.0 / 9.0).abs() < 1e-14, "{}", f.r2);
    // ŷ = 10/9, 20/9, 40/9: |ŷ − m|/m = 1/9, (16/9)/4 = 4/9, (4/9)/4 = 1/9; mean 2/9, max 4/9.
    assert!((f.rel_err_max - 4.0 / 9.0).abs() < 1e-14);
    assert!((f.rel_err_mean - 2.0 / 9.0).abs() < 1e-14);
}

#[test]
fn interval_known_answer_two_dof() {
    // Same data as r2_known_answer. One sample per group, so w_i = 1/m² = 1/y² and, on the relative
    // scale, XᵀWX = Σu² = 9/4: Bread = 4/9. Scores s_g = u·(1 − b·u) = −1/9, 2/9, −1/9:
    // Meat = 1/81 + 4/81 + 1/81 = 2/27. CR1: Cov = G/(G − k)·B·M·B = 3/2 · 16/81 · 2/27 = 16/729,
    // stderr = 4/27. dof = 3 − 1 = 2, t_{0.975, 2} = 4.30265273.
    let f = fit(
        &one_per_group(&[(1.0, 1.0), (2.0, 4.0), (4.0, 4.0)]),
        &plain(),
    )
    .unwrap();
    assert!((f.covariance[0][0] - 16.0 / 729.0).abs() < 1e-15);
    assert!((f.stderr[0] - 4.0 / 27.0).abs() < 1e-14);
    assert_eq!(f.dof, 2);
    assert!((f.t_quantile - 4.30265273).abs() < 1e-6, "{}", f.t_quantile);
    let half = 4.30265273 * 4.0 / 27.0;
    assert!((f.ci[0].0 - (10.0 / 9.0 - half)).abs() < 1e-6);
    assert!((f.ci[0].1 - (10.0 / 9.0 + half)).abs() < 1e-6);
    let (y, se) = predict(&f, &[3.0]);
    assert!((y - 10.0 / 3.0).abs() < 1e-14 && (se - 3.0 * 4.0 / 27.0).abs() < 1e-14);
}

#[test]
fn interval_known_answer_one_dof() {
    // (s, y) = (1, 1), (2, 4): u = 1, 1/2; b = (3/2)/(5/4) = 6/5; Bread = 4/5.
    // Relative residuals −1/5, 2/5; scores −1/5, 1/5: Meat = 2/25.
    // Cov = 2/1 · 16/25 · 2/25 = 64/625, stderr = 8/25; t_{0.975, 1} = 12.7062047.
    let f = fit(&one_per_group(&[(1.0, 1.0), (2.0, 4.0)]), &plain()).unwrap();
    assert!((f.params[0] - 1.2).abs() < 1e-14);
    assert!((f.stderr[0] - 0.32).abs() < 1e-14);
    assert!((f.t_quantile - 12.7062047).abs() < 1e-5, "{}", f.t_quantile);
    assert!((f.ci[0].1 - (1.2 + 12.7062047 * 0.32)).abs() < 1e-5);
}
