//! Timing noise on a shared machine is one-sided and heavy-tailed: another process, a page fault
//! or a descheduled rank only ever makes an iteration slower, sometimes by a whole scheduler
//! quantum (milliseconds against microseconds). Fitting every sample lets that tail decide the
//! line. So each size is represented by its faster half ([`lower_half`]): the half the tail
//! cannot reach unless more than half of the iterations were delayed. On a quiet machine with
//! symmetric jitter σ this lowers the estimate by about 0.67σ (1.3% at 2% jitter). The line is
//! then fitted with every sample of a size weighted by `1/(m²·n)`, `m` the median and `n` the
//! number of that size's faster-half samples (see `regress`): each size weighs the same, and the
//! fastest sample of a size weighs no more than its slowest.
//!
//! What the faster half cannot rescue (every iteration delayed) shows as a line that misses its
//! sizes; [`point_errors`] states each size's error and [`too_noisy`] names the sizes that the
//! fit must not be trusted at, which `fit` reports as a note and in fit.json.

use std::collections::BTreeMap;

use super::curves::Curve;
use super::schema::{CurveKey, PointFit};
use crate::stats::median;

/// A size whose line misses its measured time by more than this share is called out as too
/// noisy to fit (a line that misses by half does not describe the size at all).
pub const MISFIT: f64 = 0.5;

/// The faster half of the samples of every size: the ⌈n/2⌉ smallest, in ascending order.
pub fn lower_half(curve: &Curve) -> Curve {
    let half = |samples: &Vec<f64>| {
        let mut s = samples.clone();
        s.sort_by(f64::total_cmp);
        s.truncate(s.len().div_ceil(2));
        s
    };
    curve.iter().map(|(&b, s)| (b, half(s))).collect()
}

/// [`lower_half`] of every curve.
pub fn lower_halves(curves: &BTreeMap<CurveKey, Curve>) -> BTreeMap<CurveKey, Curve> {
    curves
        .iter()
        .map(|(k, c)| (k.clone(), lower_half(c)))
        .collect()
}

/// Each size's fitted time (`alpha + beta·S`, S in bytes, beta in ns/B) against its measured
/// time (the median of the samples given, the faster half after [`lower_half`]).
pub fn point_errors(curve: &Curve, alpha_us: f64, beta_ns_per_byte: f64) -> Vec<PointFit> {
    let point = |(&bytes, samples): (&usize, &Vec<f64>)| {
        let mut s = samples.clone();
        s.sort_by(f64::total_cmp);
        let measured_us = median(&s);
        let line_us = alpha_us + beta_ns_per_byte * bytes as f64 / 1e3;
        PointFit {
            bytes: bytes as u64,
            measured_us,
            line_us,
            rel_err: (line_us - measured_us) / measured_us,
        }
    };
    curve
        .iter()
        .filter(|(_, s)| !s.is_empty())
        .map(point)
        .collect()
}

/// The sentence `fit` prints when a line cannot be trusted: its R² is below zero (worse than a
/// constant) or it misses some sizes by more than [`MISFIT`]; `None` when neither.
pub fn too_noisy(what: &str, r2: f64, points: &[PointFit]) -> Option<String> {
    too_noisy_advised(what, r2, points, noise_advice(false))
}

/// What to do about a line or model too noisy to trust: collbench's own points can be measured
/// again; a log imported from another tool cannot be given more iterations.
pub fn noise_advice(imported: bool) -> &'static str {
    if imported {
        "the log holds one average per size, so noise and an algorithm change between sizes \
         cannot be told apart: measure these sizes with collbench sweep to see their samples"
    } else {
        "the machine was likely busy: rerun on an idle machine or with more --iters"
    }
}

/// [`too_noisy`] with the advice for where the points came from.
pub fn too_noisy_advised(what: &str, r2: f64, points: &[PointFit], advice: &str) -> Option<String> {
    let bad: Vec<String> = points
        .iter()
        .filter(|p| p.rel_err.abs() > MISFIT || !p.rel_err.is_finite())
        .map(|p| {
            format!(
                "{} measured {:.1} us, line {:.1} us ({:+.0}%)",
                crate::units::format_size(p.bytes as usize),
                p.measured_us,
                p.line_us,
                100.0 * p.rel_err
            )
        })
        .collect();
    if r2 >= 0.0 && bad.is_empty() {
        return None;
    }
    let at = if bad.is_empty() {
        String::new()
    } else {
        format!(
            "; off by more than {:.0}% at {}",
            100.0 * MISFIT,
            bad.join(", ")
        )
    };
    Some(format!(
        "{what}: too noisy to fit: the line explains its sizes {} (R2 {r2:.2}){at}; {advice}",
        if r2 < 0.0 {
            "worse than their mean"
        } else {
            "poorly"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_faster_half_drops_a_one_sided_tail() {
        let curve: Curve = [(1024, vec![9.0, 1.0, 50.0, 1.1, 4000.0])].into();
        assert_eq!(lower_half(&curve)[&1024], vec![1.0, 1.1, 9.0]);
        let one: Curve = [(8, vec![3.0])].into();
        assert_eq!(lower_half(&one)[&8], vec![3.0]);
    }

    #[test]
    fn a_line_that_misses_a_size_by_half_is_called_too_noisy() {
        let curve: Curve = [(1000, vec![2.0]), (2000, vec![9.0])].into();
        let p = point_errors(&curve, 1.0, 1.0);
        assert_eq!((p[0].line_us, p[1].line_us), (2.0, 3.0));
        assert!(p[0].rel_err.abs() < 1e-12);
        let note = too_noisy("host allgather", 0.5, &p).unwrap();
        assert!(
            note.contains("too noisy") && note.contains("1.95 KiB measured 9.0 us, line 3.0 us")
        );
        assert!(note.contains("-67%"), "{note}");
        assert!(too_noisy("x", 0.9, &p[..1]).is_none());
        assert!(too_noisy("x", -0.1, &p[..1])
            .unwrap()
            .contains("worse than their mean"));
    }
}
