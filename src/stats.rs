//! Sample statistics of timing samples (microseconds): mean, median, percentiles, spread.
//!
//! Percentiles use linear interpolation between closest ranks (Hyndman & Fan type 7), the default
//! of numpy, R and most spreadsheets, so numbers can be checked against those tools.

use serde::{Deserialize, Serialize};

mod rank_test;
pub use rank_test::{mann_whitney_p, normal_sf};
mod drift;
pub use drift::drift;

/// The summary of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (the mean of the two middle samples when `n` is even).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// 95th percentile (type 7, see [`percentile`]).
    pub p95: f64,
    /// 99th percentile (type 7, see [`percentile`]).
    pub p99: f64,
    /// Sample standard deviation (divisor `n - 1`); 0 when `n == 1`.
    pub stddev: f64,
    /// Coefficient of variation `stddev / mean`; 0 when the mean is 0.
    pub cv: f64,
    /// Median absolute deviation from the median, unscaled (multiply by 1.4826 to estimate the
    /// standard deviation of normal data).
    pub mad: f64,
}

impl Summary {
    /// Summarises `samples` (any order). `None` when there are no samples, when any sample is
    /// not finite, or when the statistics themselves overflow.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let stddev = sample_stddev(&sorted, mean);
        let median = median(&sorted);
        let summary = Summary {
            n,
            mean,
            median,
            min: sorted[0],
            max: sorted[n - 1],
            p95: percentile(&sorted, 0.95),
            p99: percentile(&sorted, 0.99),
            stddev,
            cv: if mean == 0.0 { 0.0 } else { stddev / mean },
            mad: mad(&sorted, median),
        };
        // Finite samples near f64::MAX can still overflow the sum of squares.
        let all_finite = [summary.mean, summary.stddev, summary.cv, summary.mad]
            .iter()
            .all(|x| x.is_finite());
        all_finite.then_some(summary)
    }
}

/// Sample standard deviation with divisor `n - 1`, two-pass for accuracy; 0 for one sample.
fn sample_stddev(samples: &[f64], mean: f64) -> f64 {
    if samples.len() < 2 {
        return 0.0;
    }
    let ss: f64 = samples.iter().map(|x| (x - mean) * (x - mean)).sum();
    (ss / (samples.len() - 1) as f64).sqrt()
}

/// Median absolute deviation of `values` (in any order) around their `median_value`.
fn mad(values: &[f64], median_value: f64) -> f64 {
    let mut dev: Vec<f64> = values.iter().map(|x| (x - median_value).abs()).collect();
    median_of(&mut dev)
}

/// Median absolute deviation from the median (unscaled) of `values` in any order; NaN when
/// empty.
pub fn mad_of(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    let center = median_of(&mut v);
    mad(&v, center)
}

/// The median of `v` in any order (reordered) by selection, O(n): the same number as
/// [`median`] of `v` sorted. NaN when empty.
pub fn median_of(v: &mut [f64]) -> f64 {
    let (half, odd) = (v.len() / 2, v.len() % 2 == 1);
    if v.is_empty() {
        return f64::NAN;
    }
    let (below, &mut upper, _) = v.select_nth_unstable_by(half, f64::total_cmp);
    if odd {
        upper
    } else {
        (below.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b)) + upper) / 2.0
    }
}

/// The `q`-quantile (`q` in `[0, 1]`, clamped) of ascending `sorted` samples, by linear
/// interpolation between closest ranks (Hyndman & Fan type 7, numpy's default): with
/// `h = (n - 1) q`, the result is `x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h])`.
/// So `q = 0` is the minimum, `q = 1` the maximum and `q = 0.5` the median. NaN when `sorted` is
/// empty or `q` is NaN.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The median of ascending `sorted` samples: the middle one, or the mean of the two middle ones
/// when their number is even. NaN when `sorted` is empty.
pub fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

crate::named::named_enum!(
    /// Which rank's loop time a point reports (nccl-tests `-a`, `--average`: 0 rank 0's, 1 the
    /// mean over ranks, its default, 2 the smallest, 3 the largest).
    #[derive(Default)]
    LoopRank, "loop rank", {
        Rank0 => "rank0" | "0",
        #[default]
        Avg => "avg" | "1",
        Min => "min" | "2",
        Max => "max" | "3",
    }
);

/// The loop time of a point (`PointRecord::loop_time_us`) from its members' (group order) as
/// `rank` chooses (nccl-tests' default `-a 1`: their mean); `None` without members or with a
/// time that is not one.
pub fn loop_time_of(per_rank_us: &[f64], rank: LoopRank) -> Option<f64> {
    let positive = per_rank_us.iter().all(|t| *t > 0.0 && t.is_finite());
    let s = Summary::of(per_rank_us).filter(|_| positive)?;
    Some(match rank {
        LoopRank::Rank0 => per_rank_us[0],
        LoopRank::Avg => s.mean,
        LoopRank::Min => s.min,
        LoopRank::Max => s.max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn odd_sample_hand_computed() {
        // Sorted: 1 2 3 4 10. Deviations from the mean 4: -3 -2 -1 0 6, squares sum to 50.
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0, 10.0]).unwrap();
        assert_eq!(
            (s.n, s.mean, s.median, s.min, s.max),
            (5, 4.0, 3.0, 1.0, 10.0)
        );
        // p95: h = 4 * 0.95 = 3.8, 4 + 0.8 * (10 - 4) = 8.8; p99: h = 3.96, 4 + 0.96 * 6 = 9.76.
        assert!(close(s.p95, 8.8), "{}", s.p95);
        assert!(close(s.p99, 9.76), "{}", s.p99);
        assert!(close(s.stddev, 12.5f64.sqrt()));
        assert!(close(s.cv, 12.5f64.sqrt() / 4.0));
        // |x - 3| = 2 1 0 1 7 -> sorted 0 1 1 2 7 -> median 1.
        assert_eq!(s.mad, 1.0);
    }

    #[test]
    fn even_sample_hand_computed() {
        let s = Summary::of(&[3.0, 1.0, 4.0, 2.0]).unwrap();
        assert_eq!((s.mean, s.median), (2.5, 2.5));
        // Squares of deviations 2.25 0.25 0.25 2.25 = 5, / 3.
        assert!(close(s.stddev, (5.0f64 / 3.0).sqrt()));
        // |x - 2.5| = 1.5 0.5 0.5 1.5 -> median 1.
        assert_eq!(s.mad, 1.0);
        // p95: h = 3 * 0.95 = 2.85 -> 3 + 0.85 = 3.85.
        assert!(close(s.p95, 3.85));
    }

    #[test]
    fn percentile_matches_numpy_type_7() {
        let x = [1.0, 2.0, 3.0, 4.0];
        // numpy.percentile([1, 2, 3, 4], [0, 25, 50, 75, 100]) = 1, 1.75, 2.5, 3.25, 4.
        let want = [
            (0.0, 1.0),
            (0.25, 1.75),
            (0.5, 2.5),
            (0.75, 3.25),
            (1.0, 4.0),
        ];
        for (q, v) in want {
            assert!(close(percentile(&x, q), v), "q={q}");
        }
        // Out-of-range quantiles clamp; degenerate inputs give NaN rather than a panic.
        assert_eq!(percentile(&x, -1.0), 1.0);
        assert_eq!(percentile(&x, 2.0), 4.0);
        assert!(percentile(&[], 0.5).is_nan());
        assert!(percentile(&x, f64::NAN).is_nan());
        assert_eq!(percentile(&[7.0], 0.95), 7.0);
    }

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[1.0, 5.0, 9.0]), 5.0);
        assert_eq!(median(&[1.0, 5.0, 9.0, 11.0]), 7.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn median_by_selection_is_the_sorted_median_and_mad_follows() {
        let mut v = vec![9.0, 1.0, 11.0, 5.0];
        assert_eq!(median_of(&mut v), 7.0);
        let mut odd = vec![3.0, -1.0, 8.0];
        assert_eq!(median_of(&mut odd), 3.0);
        assert!(median_of(&mut []).is_nan());
        // Deviations from 7: 2, 6, 4, 2 -> median 3.
        assert_eq!(mad_of(&[9.0, 1.0, 11.0, 5.0]), 3.0);
        assert!(mad_of(&[]).is_nan());
    }

    #[test]
    fn single_sample_has_no_spread() {
        let s = Summary::of(&[42.0]).unwrap();
        assert_eq!(
            (s.mean, s.median, s.min, s.max, s.p95, s.p99),
            (42.0, 42.0, 42.0, 42.0, 42.0, 42.0)
        );
        assert_eq!((s.stddev, s.cv, s.mad), (0.0, 0.0, 0.0));
    }

    #[test]
    fn zero_mean_gives_zero_cv() {
        let s = Summary::of(&[-1.0, 1.0]).unwrap();
        assert_eq!(s.mean, 0.0);
        assert_eq!(s.cv, 0.0);
        assert!(close(s.stddev, 2f64.sqrt()));
    }

    #[test]
    fn rejects_empty_and_non_finite() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::of(&[f64::INFINITY, 1.0]), None);
        assert_eq!(Summary::of(&[f64::MAX, -f64::MAX, f64::MAX]), None);
    }

    #[test]
    fn serde_round_trip() {
        let s = Summary::of(&[1.0, 2.0, 4.0]).unwrap();
        let json = serde_json::to_string(&s).unwrap();
        assert!(
            json.contains("\"p95\":3.8") && json.contains("\"mad\":1.0"),
            "{json}"
        );
        // serde_json's default float parser may be 1 ulp off (exact needs `float_roundtrip`).
        let back: Summary = serde_json::from_str(&json).unwrap();
        assert_eq!((back.n, back.median, back.mad), (3, 2.0, 1.0));
        assert!(close(back.stddev, s.stddev) && close(back.cv, s.cv));
    }

    #[test]
    fn loop_time_is_the_chosen_ranks() {
        let loops = [4.0, 2.0, 9.0];
        let of = |r| loop_time_of(&loops, r);
        assert_eq!(of(LoopRank::Rank0), Some(4.0));
        assert_eq!(of(LoopRank::Avg), Some(5.0));
        assert_eq!(of(LoopRank::Min), Some(2.0));
        assert_eq!(of(LoopRank::Max), Some(9.0));
        for r in LoopRank::ALL {
            assert_eq!(loop_time_of(&[], *r), None, "{r}");
            assert_eq!(loop_time_of(&[1.0, f64::NAN], *r), None, "{r}");
            assert_eq!(loop_time_of(&[1.0, 0.0], *r), None, "{r}");
        }
        assert_eq!("3".parse::<LoopRank>().unwrap(), LoopRank::Max);
        assert_eq!("rank0".parse::<LoopRank>().unwrap(), LoopRank::Rank0);
    }
}
