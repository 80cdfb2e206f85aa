use super::*;

/// Deterministic multiplicative noise: exp(`sd`·N(0,1)), N from 12 xorshift64* uniforms.
struct Noise(u64);

impl Noise {
    fn factor(&mut self, sd: f64) -> f64 {
        let mut sum = 0.0;
        for _ in 0..12 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            sum += (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
        }
        (sd * (sum - 6.0)).exp()
    }
}

/// 8 B .. 64 MiB in ×2 steps (24 sizes), `samples` each, time from `line(bytes)`.
fn curve(line: impl Fn(f64) -> f64, sd: f64, samples: usize, seed: u64) -> Vec<Obs> {
    let mut noise = Noise(2 * seed + 1);
    let mut obs = Vec::new();
    for g in 0..24 {
        let s = 8.0 * 2f64.powi(g as i32);
        for _ in 0..samples {
            obs.push(Obs {
                x: vec![1.0, s],
                y: line(s) * noise.factor(sd),
                group: g,
            });
        }
    }
    obs
}

fn rel(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}

#[test]
fn noise_free_line_is_one_segment() {
    let obs = curve(|s| 5.0 + 1e-4 * s, 0.0, 5, 1);
    let seg = segment(&obs, &RobustOptions::default(), &SegmentOptions::default()).unwrap();
    assert_eq!(seg.segments.len(), 1);
    let only = &seg.segments[0];
    assert_eq!(
        (only.min_bytes, only.max_bytes),
        (8.0, 64.0 * 1024.0 * 1024.0)
    );
    assert!(rel(only.fit.params[0], 5.0) < 1e-9 && rel(only.fit.params[1], 1e-4) < 1e-9);
    let counts: Vec<usize> = seg.bic.iter().map(|b| b.0).collect();
    assert_eq!(counts, vec![1, 2, 3]);
    assert!(
        seg.bic[0].1 < seg.bic[1].1 && seg.bic[1].1 < seg.bic[2].1,
        "{:?}",
        seg.bic
    );
}

/// Sizes up to 64 KiB: alpha 2 µs, 10 GB/s; above: alpha 20 µs, 20 GB/s.
fn two_regimes(s: f64) -> f64 {
    if s <= 65536.0 {
        2.0 + 1e-4 * s
    } else {
        20.0 + 5e-5 * s
    }
}

#[test]
fn two_regimes_are_found_at_the_right_size() {
    let obs = curve(two_regimes, 0.02, 50, 3);
    let seg = segment(&obs, &RobustOptions::default(), &SegmentOptions::default()).unwrap();
    assert_eq!(seg.segments.len(), 2, "{:?}", seg.bic);
    let (small, large) = (&seg.segments[0], &seg.segments[1]);
    assert_eq!((small.min_bytes, small.max_bytes), (8.0, 65536.0));
    assert_eq!(
        (large.min_bytes, large.max_bytes),
        (131072.0, 64.0 * 1024.0 * 1024.0)
    );
    let truth = [(small, [2.0, 1e-4]), (large, [20.0, 5e-5])];
    for (s, [alpha, beta]) in truth {
        let p = &s.fit.params;
        assert!(
            rel(p[0], alpha) < 0.05 && rel(p[1], beta) < 0.05,
            "{p:?} vs {alpha} {beta}"
        );
    }
    let best = seg.bic.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    assert_eq!(best.0, 2);
}

#[test]
fn the_break_is_found_under_every_noise_draw() {
    // BIC charges a breakpoint ln(m) like any parameter, but the best of ~20 cut positions fits
    // noise better than one parameter does, so a spurious third segment wins for some draws
    // (6 of these 20 draws; about 1 in 5 over more). The real break must be among the cuts every time.
    let mut exactly_two = 0;
    for seed in 0..20 {
        let obs = curve(two_regimes, 0.02, 50, seed);
        let seg = segment(&obs, &RobustOptions::default(), &SegmentOptions::default()).unwrap();
        let ends: Vec<f64> = seg.segments.iter().map(|s| s.max_bytes).collect();
        assert!(
            seg.segments.len() >= 2 && ends.contains(&65536.0),
            "seed {seed}: {ends:?}"
        );
        exactly_two += usize::from(seg.segments.len() == 2);
    }
    assert!(exactly_two >= 12, "{exactly_two} of 20");
}

#[test]
fn one_segment_when_only_one_is_allowed() {
    let obs = curve(two_regimes, 0.02, 10, 3);
    let opts = SegmentOptions {
        max_segments: 1,
        min_sizes: 3,
    };
    let seg = segment(&obs, &RobustOptions::default(), &opts).unwrap();
    assert_eq!((seg.segments.len(), seg.bic.len()), (1, 1));
}

#[test]
fn segments_respect_the_minimum_size_count() {
    let obs = curve(two_regimes, 0.02, 10, 4);
    let opts = SegmentOptions {
        max_segments: 3,
        min_sizes: 12,
    };
    let seg = segment(&obs, &RobustOptions::default(), &opts).unwrap();
    assert!(seg.bic.iter().all(|b| b.0 <= 2));
    let groups: Vec<usize> = seg.segments.iter().map(|s| s.fit.groups).collect();
    assert!(groups.iter().all(|&g| g >= 12), "{groups:?}");
}

#[test]
fn too_few_sizes_or_bad_input_is_an_error() {
    let obs = curve(|s| 5.0 + 1e-4 * s, 0.0, 3, 5);
    let two: Vec<Obs> = obs.iter().filter(|o| o.group < 2).cloned().collect();
    let defaults = (RobustOptions::default(), SegmentOptions::default());
    let too_few = Err(FitError::TooFewGroups { need: 3, have: 2 });
    assert_eq!(segment(&two, &defaults.0, &defaults.1), too_few);
    let four: Vec<Obs> = obs.iter().filter(|o| o.group < 4).cloned().collect();
    let opts = SegmentOptions {
        max_segments: 2,
        min_sizes: 5,
    };
    let too_few = Err(FitError::TooFewGroups { need: 5, have: 4 });
    assert_eq!(segment(&four, &defaults.0, &opts), too_few);
    assert_eq!(
        segment(&[], &defaults.0, &defaults.1),
        Err(FitError::NonFinite)
    );
    let mut nan = obs.clone();
    nan[7].y = f64::NAN;
    assert_eq!(
        segment(&nan, &defaults.0, &defaults.1),
        Err(FitError::NonFinite)
    );
    let mut wide = obs.clone();
    wide[0].x.push(1.0);
    assert_eq!(
        segment(&wide, &defaults.0, &defaults.1),
        Err(FitError::Singular)
    );
    let zero = SegmentOptions {
        max_segments: 0,
        min_sizes: 0,
    };
    assert_eq!(
        segment(&obs, &defaults.0, &zero).map(|s| s.segments.len()),
        Ok(1)
    );
}

#[test]
fn many_sizes_are_cut_at_a_bounded_number_of_positions_and_the_break_is_still_found() {
    assert_eq!(cut_positions(24), (0..=24).collect::<Vec<_>>());
    assert_eq!(cut_positions(MAX_EXACT_SIZES).len(), MAX_EXACT_SIZES + 1);
    for m in [65, 800, 10_000] {
        let p = cut_positions(m);
        assert!(p.len() <= MAX_EXACT_SIZES + 1, "{m}: {}", p.len());
        assert_eq!((p[0], p[p.len() - 1]), (0, m));
        assert!(p.windows(2).all(|w| w[0] < w[1]));
    }
    // nccl-tests with linear steps: 2000 sizes of 64 B, one sample each; the break at 64 KiB
    // (size 1024) lies between two of the 65 positions searched (every 31.25 sizes).
    let mut noise = Noise(7);
    let obs: Vec<Obs> = (1..=2000)
        .map(|k| {
            let s = 64.0 * k as f64;
            Obs {
                x: vec![1.0, s],
                y: two_regimes(s) * noise.factor(0.01),
                group: k,
            }
        })
        .collect();
    let seg = segment(&obs, &RobustOptions::default(), &SegmentOptions::default()).unwrap();
    assert_eq!(seg.segments.len(), 2, "{:?}", seg.bic);
    let cut = seg.segments[0].max_bytes;
    assert!((60_000.0..=70_000.0).contains(&cut), "{cut}");
    assert_eq!(seg.segments[1].max_bytes, 128_000.0);
}
