use super::*;

/// A deterministic pseudo-random source (xorshift64*), uniform in [0, 1).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Approximately standard normal (Irwin–Hall: the sum of 12 uniforms, minus 6).
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
    }

    /// `truth` × exp(`noise`·N(0,1)), and × 3 with probability `outliers`.
    fn sample(&mut self, truth: f64, noise: f64, outliers: f64) -> f64 {
        let y = truth * (noise * self.normal()).exp();
        if self.uniform() < outliers {
            3.0 * y
        } else {
            y
        }
    }
}

const ALPHA: f64 = 5.0;
const BETA: f64 = 1e-4;

/// 8 B .. 64 MiB in ×2 steps (24 sizes).
fn sizes() -> Vec<f64> {
    (0..24).map(|i| 8.0 * 2f64.powi(i)).collect()
}

/// 50 samples of each of [`sizes`].
fn alpha_beta(alpha: f64, beta: f64, noise: f64, outliers: f64, seed: u64) -> Vec<Obs> {
    let mut rng = Rng::new(seed);
    let mut obs = Vec::new();
    for (g, s) in sizes().into_iter().enumerate() {
        for _ in 0..50 {
            let y = rng.sample(alpha + beta * s, noise, outliers);
            obs.push(Obs {
                x: vec![1.0, s],
                y,
                group: g,
            });
        }
    }
    obs
}

/// x = [1, 2(p−1), 2(p−1)/p·S]: a launch cost, a per-step latency and ring bandwidth.
fn three_param(truth: [f64; 3], noise: f64, outliers: f64, seed: u64) -> Vec<Obs> {
    let mut rng = Rng::new(seed);
    let mut obs = Vec::new();
    for p in 2..=8 {
        let pf = p as f64;
        for i in 0..8 {
            let s = 1024.0 * 4f64.powi(i);
            let x = vec![1.0, 2.0 * (pf - 1.0), 2.0 * (pf - 1.0) / pf * s];
            let group = p * 100 + i as usize;
            for _ in 0..30 {
                let y = rng.sample(dot(&x, &truth), noise, outliers);
                obs.push(Obs {
                    x: x.clone(),
                    y,
                    group,
                });
            }
        }
    }
    obs
}

fn rel(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}

fn one_per_group(points: &[(f64, f64)]) -> Vec<Obs> {
    let obs = points.iter().enumerate();
    obs.map(|(group, &(s, y))| Obs {
        x: vec![s],
        y,
        group,
    })
    .collect()
}

fn plain() -> RobustOptions {
    RobustOptions {
        huber_k: f64::INFINITY,
        ..RobustOptions::default()
    }
}

#[test]
fn noise_free_alpha_beta_is_exact() {
    let obs = alpha_beta(ALPHA, BETA, 0.0, 0.0, 1);
    let f = fit(&obs, &RobustOptions::default()).unwrap();
    assert!(
        rel(f.params[0], ALPHA) < 1e-9 && rel(f.params[1], BETA) < 1e-9,
        "{:?}",
        f.params
    );
    assert!(
        f.stderr[0] < 1e-9 * ALPHA && f.stderr[1] < 1e-9 * BETA,
        "{:?}",
        f.stderr
    );
    assert!((f.r2 - 1.0).abs() < 1e-12 && f.rel_err_max < 1e-12);
    assert_eq!((f.n, f.groups, f.dof, f.downweighted), (1200, 24, 22, 0));
    assert_eq!(f.held_at_zero, vec![false, false]);
}

#[test]
fn noisy_alpha_beta_with_outliers_within_two_percent() {
    let obs = alpha_beta(ALPHA, BETA, 0.02, 0.05, 2);
    let f = fit(&obs, &RobustOptions::default()).unwrap();
    assert!(
        rel(f.params[0], ALPHA) < 0.02 && rel(f.params[1], BETA) < 0.02,
        "{:?}",
        f.params
    );
    assert!(
        f.downweighted >= 60,
        "outliers are down-weighted: {}",
        f.downweighted
    );
    assert!(f.iterations > 1 && f.iterations < 50);
    assert!(
        f.r2 > 0.99 && f.rel_err_mean < 0.02,
        "{} {}",
        f.r2,
        f.rel_err_mean
    );
    // The intervals cover the sampling noise, not a one-sided contamination: Huber caps each
    // 3x-slow sample's pull at huber_k·s on its size's scale but does not cancel it (about +0.2%
    // here, a few standard errors), which is why `collbench fit` drops the slower half of every
    // size before fitting. On the same noise without outliers they cover the truth.
    let clean = fit(
        &alpha_beta(ALPHA, BETA, 0.02, 0.0, 2),
        &RobustOptions::default(),
    )
    .unwrap();
    for (j, truth) in [ALPHA, BETA].into_iter().enumerate() {
        assert!(rel(f.params[j], truth) < 0.005, "{:?}", f.params);
        assert!(
            clean.ci[j].0 < truth && truth < clean.ci[j].1,
            "{:?} {}",
            clean.ci[j],
            truth
        );
    }
}

#[test]
fn three_parameter_form() {
    let truth = [10.0, 3.0, 2e-4];
    let exact = fit(&three_param(truth, 0.0, 0.0, 3), &RobustOptions::default()).unwrap();
    for (j, &truth) in truth.iter().enumerate() {
        assert!(rel(exact.params[j], truth) < 1e-9, "{:?}", exact.params);
        assert!(exact.stderr[j] < 1e-9 * truth);
    }
    assert!((exact.r2 - 1.0).abs() < 1e-12);
    let noisy = fit(
        &three_param(truth, 0.02, 0.05, 4),
        &RobustOptions::default(),
    )
    .unwrap();
    for (p, truth) in noisy.params.iter().zip(truth) {
        assert!(rel(*p, truth) < 0.02, "{:?}", noisy.params);
    }
    assert_eq!((noisy.groups, noisy.dof), (56, 53));
}

#[test]
fn proportional_columns_are_singular() {
    // 2(p−1)/p·S and (p−1)/p·S are proportional: no data separate their coefficients.
    let mut obs = Vec::new();
    for (g, p) in (2..=8).enumerate() {
        let pf = p as f64;
        let x = vec![
            2.0 * (pf - 1.0),
            2.0 * (pf - 1.0) / pf * 1e6,
            (pf - 1.0) / pf * 1e6,
        ];
        obs.push(Obs {
            y: dot(&x, &[1.0, 1e-4, 1e-4]),
            x,
            group: g,
        });
    }
    assert_eq!(
        fit(&obs, &RobustOptions::default()),
        Err(FitError::Singular)
    );
}

#[test]
fn relative_weighting_recovers_alpha_where_least_squares_does_not() {
    // One sample per size from 8 B to 1 GiB (as from a summary's medians), 2% multiplicative
    // noise: at 1 GiB that is ±2000 µs, which ordinary least squares lets into alpha (5 µs).
    for seed in 20..25 {
        let mut rng = Rng::new(seed);
        let obs: Vec<Obs> = (0..28)
            .map(|g| {
                let s = 8.0 * 2f64.powi(g);
                let y = rng.sample(ALPHA + BETA * s, 0.02, 0.0);
                Obs {
                    x: vec![1.0, s],
                    y,
                    group: g as usize,
                }
            })
            .collect();
        // Ordinary least squares: one sample per group, so m = y and weights y² undo the 1/m²
        // inside `Design::z` and `Design::t`.
        let d = Design::new(&obs).unwrap();
        let squares: Vec<f64> = obs.iter().map(|o| o.y * o.y).collect();
        let ols = wls(&d, &squares, &[false, false]).unwrap();
        let ours = fit(&obs, &plain()).unwrap();
        assert!(rel(ols[0], ALPHA) > 1.0, "least squares alpha {}", ols[0]);
        assert!(
            rel(ours.params[0], ALPHA) < 0.02,
            "relative alpha {}",
            ours.params[0]
        );
    }
}

#[test]
fn every_group_counts_once_whatever_its_samples() {
    let points = [(1.0, 1.3), (2.0, 1.9), (4.0, 4.4), (8.0, 7.7)];
    let once = fit(&one_per_group(&points), &plain()).unwrap();
    let mut repeated = one_per_group(&points);
    repeated.extend(std::iter::repeat(repeated[0].clone()).take(9));
    let again = fit(&repeated, &plain()).unwrap();
    assert!(rel(again.params[0], once.params[0]) < 1e-12);
    assert!(rel(again.stderr[0], once.stderr[0]) < 1e-9);
}

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

#[test]
fn negative_alpha_is_held_at_zero() {
    let obs = alpha_beta(0.0, BETA, 0.02, 0.0, 6);
    let free = RobustOptions {
        nonnegative: false,
        ..RobustOptions::default()
    };
    let unconstrained = fit(&obs, &free).unwrap();
    assert!(
        unconstrained.params[0] < 0.0,
        "this seed must give alpha < 0"
    );
    let f = fit(&obs, &RobustOptions::default()).unwrap();
    assert_eq!(f.held_at_zero, vec![true, false]);
    assert_eq!((f.params[0], f.stderr[0], f.ci[0]), (0.0, 0.0, (0.0, 0.0)));
    assert_eq!(f.covariance[0], vec![0.0, 0.0]);
    assert!(rel(f.params[1], BETA) < 0.02 && f.stderr[1] > 0.0);
    assert_eq!(f.dof, 23);
}

#[test]
fn greedy_holding_agrees_on_alpha_beta() {
    // The fallback for more than MAX_SUBSET_PARAMS parameters, checked where it must agree.
    let obs = alpha_beta(0.0, BETA, 0.02, 0.0, 6);
    let (d, opts) = (Design::new(&obs).unwrap(), RobustOptions::default());
    let (greedy, held) = hold_greedily(&d, &opts, robust(&d, &[false, false], &opts).unwrap());
    let exhaustive = fit(&obs, &opts).unwrap();
    assert_eq!(held, exhaustive.held_at_zero);
    assert_eq!(greedy.params, exhaustive.params);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let opts = RobustOptions::default();
    let good = alpha_beta(ALPHA, BETA, 0.0, 0.0, 7);
    assert_eq!(fit(&[], &opts), Err(FitError::NonFinite));
    for y in [f64::NAN, -1.0, 0.0, f64::INFINITY] {
        let mut obs = good.clone();
        obs[10].y = y;
        assert_eq!(fit(&obs, &opts), Err(FitError::NonFinite), "y = {y}");
    }
    let mut obs = good.clone();
    obs[3].x[1] = f64::NAN;
    assert_eq!(fit(&obs, &opts), Err(FitError::NonFinite));
    obs[3].x = vec![1.0];
    assert_eq!(fit(&obs, &opts), Err(FitError::NonFinite));
    let one: Vec<Obs> = good.iter().filter(|o| o.group == 4).cloned().collect();
    let too_few = Err(FitError::TooFewGroups { need: 3, have: 1 });
    assert_eq!(fit(&one, &opts), too_few);
    let same_x: Vec<Obs> = good
        .iter()
        .map(|o| Obs {
            x: vec![1.0, 64.0],
            ..o.clone()
        })
        .collect();
    assert_eq!(fit(&same_x, &opts), Err(FitError::Singular));
    let zero_col: Vec<Obs> = good
        .iter()
        .map(|o| Obs {
            x: vec![1.0, 0.0],
            ..o.clone()
        })
        .collect();
    assert_eq!(fit(&zero_col, &opts), Err(FitError::Singular));
    let no_x: Vec<Obs> = good
        .iter()
        .map(|o| Obs {
            x: vec![],
            ..o.clone()
        })
        .collect();
    assert_eq!(fit(&no_x, &opts), Err(FitError::Singular));
}

#[test]
fn odd_inputs_and_options_never_panic() {
    let mut rng = Rng::new(8);
    let values = [
        0.0,
        -1.0,
        1e-300,
        1e300,
        1.0,
        3.5,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::NAN,
    ];
    let odd_opts = [
        RobustOptions::default(),
        RobustOptions {
            confidence: 1.0,
            huber_k: 0.0,
            ..RobustOptions::default()
        },
        RobustOptions {
            confidence: f64::NAN,
            huber_k: f64::NAN,
            tol: f64::NAN,
            ..plain()
        },
        RobustOptions {
            confidence: -3.0,
            max_iter: 0,
            nonnegative: false,
            ..plain()
        },
    ];
    for round in 0..400 {
        let k = 1 + round % 4;
        let pick = |rng: &mut Rng| values[(rng.uniform() * values.len() as f64) as usize];
        let obs: Vec<Obs> = (0..1 + round % 13)
            .map(|i| Obs {
                x: (0..k).map(|_| pick(&mut rng)).collect(),
                y: if rng.uniform() < 0.9 {
                    rng.uniform() * 10.0 + 1e-3
                } else {
                    pick(&mut rng)
                },
                group: i % (1 + round % 7),
            })
            .collect();
        let opts = &odd_opts[round % odd_opts.len()];
        let _ = fit(&obs, opts);
        let _ = leave_one_group_out(&obs, opts);
        let _ = group_medians(&obs);
    }
}

#[test]
fn leave_one_group_out_noise_free_is_exact() {
    let obs = alpha_beta(ALPHA, BETA, 0.0, 0.0, 9);
    let holdouts = leave_one_group_out(&obs, &RobustOptions::default()).unwrap();
    assert_eq!(holdouts.len(), 24);
    assert!(holdouts
        .iter()
        .enumerate()
        .all(|(g, h)| h.group == g && h.rel_err < 1e-9));
}

#[test]
fn leave_one_group_out_finds_the_odd_group() {
    let mut obs = alpha_beta(ALPHA, BETA, 0.01, 0.0, 10);
    obs.iter_mut()
        .filter(|o| o.group == 12)
        .for_each(|o| o.y *= 1.5);
    let holdouts = leave_one_group_out(&obs, &RobustOptions::default()).unwrap();
    let worst = holdouts
        .iter()
        .max_by(|a, b| a.rel_err.total_cmp(&b.rel_err))
        .unwrap();
    assert_eq!(worst.group, 12);
    assert!(worst.rel_err > 0.2, "{}", worst.rel_err);
    let three: Vec<Obs> = obs.into_iter().filter(|o| o.group < 3).collect();
    let too_few = Err(FitError::TooFewGroups { need: 4, have: 3 });
    assert_eq!(
        leave_one_group_out(&three, &RobustOptions::default()),
        too_few
    );
}

#[test]
fn group_medians_ascend_by_group() {
    let obs = [(5, 3.0), (2, 1.0), (5, 1.0), (2, 4.0), (5, 2.0), (9, 7.0)];
    let obs: Vec<Obs> = obs
        .iter()
        .map(|&(group, y)| Obs {
            x: vec![1.0],
            y,
            group,
        })
        .collect();
    assert_eq!(group_medians(&obs), vec![(2, 2.5), (5, 2.0), (9, 7.0)]);
}
