//! Drift of a quantity measured again and again (a soak's cycles, acceptance repeats): the
//! median of the last quarter of the series over the median of its first quarter, minus one.
//! Medians of quarters, not the first and last values, so that one slow cycle at either end
//! is not called a drift; a quarter is at least one value, so two values compare the two.

/// `(median of the last ⌈n/4⌉) / (median of the first ⌈n/4⌉) − 1`, as a fraction (0.1 is 10%
/// slower at the end); `None` below two values, or where a value is not finite and positive.
pub fn drift(series: &[f64]) -> Option<f64> {
    let n = series.len();
    if n < 2 || series.iter().any(|x| !(x.is_finite() && *x > 0.0)) {
        return None;
    }
    let quarter = n.div_ceil(4).min(n / 2).max(1);
    let first = super::median_of(&mut series[..quarter].to_vec());
    let last = super::median_of(&mut series[n - quarter..].to_vec());
    Some(last / first - 1.0)
}

#[cfg(test)]
mod tests {
    use super::drift;

    #[test]
    fn quarters_not_single_values_set_the_drift() {
        assert_eq!(drift(&[10.0, 11.0]), Some(11.0 / 10.0 - 1.0));
        // 8 values: quarters of 2, each the mean of its two values.
        let s = [50.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0];
        assert_eq!(drift(&s), Some(10.0 / 30.0 - 1.0));
        // A slow value between the quarters is no drift.
        let s = [10.0, 10.0, 99.0, 10.0, 10.0, 10.0, 12.0, 12.0];
        assert_eq!(drift(&s), Some(12.0 / 10.0 - 1.0));
        // 9 values: quarters of 3 (rounded up), medians 10 and 15.
        let s = [10.0, 9.0, 11.0, 30.0, 1.0, 1.0, 15.0, 14.0, 16.0];
        assert_eq!(drift(&s), Some(0.5));
        // 3 values: quarters of 1 (never overlapping halves).
        assert_eq!(drift(&[10.0, 99.0, 5.0]), Some(-0.5));
    }

    #[test]
    fn too_few_or_undefined_values_have_no_drift() {
        assert_eq!(drift(&[]), None);
        assert_eq!(drift(&[1.0]), None);
        for bad in [f64::NAN, f64::INFINITY, 0.0, -1.0] {
            assert_eq!(drift(&[1.0, bad, 1.0]), None, "{bad}");
        }
    }
}
