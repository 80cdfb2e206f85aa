//! The edges of a fit: non-negativity (exhaustive and greedy), bad and odd input that must not
//! panic, leave-one-group-out, and the group medians.

use super::*;

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
fn many_groups_hold_out_a_bounded_evenly_spaced_set() {
    assert_eq!(held_out_groups(10), (0..10).collect::<Vec<_>>());
    let g = held_out_groups(5000);
    assert_eq!(g.len(), MAX_HOLDOUTS);
    assert_eq!((g[0], g[g.len() - 1]), (0, 4999));
    // 200 sizes of one exact line, two samples each: 64 refits, each exact.
    let obs: Vec<Obs> = (0..400)
        .map(|i| {
            let s = 1024.0 * (1 + i / 2) as f64;
            Obs {
                x: vec![1.0, s],
                y: ALPHA + BETA * s,
                group: i / 2,
            }
        })
        .collect();
    let h = leave_one_group_out(&obs, &RobustOptions::default()).unwrap();
    assert_eq!(h.len(), MAX_HOLDOUTS);
    assert!(h.iter().all(|h| h.rel_err < 1e-9) && h[h.len() - 1].group == 199);
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
