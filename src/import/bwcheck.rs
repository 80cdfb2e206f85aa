//! Checking a log's printed bandwidths against collbench's own: algbw = bytes / time × the
//! nccl-tests algbw factor (1 but for hypercube) and busbw = algbw × the nccl-tests factor, within what the log's rounding allows. A mismatch is
//! reported, never hidden or corrected: it means a different convention or a broken log.

use super::log::Half;

/// Printed bandwidths carry two decimals (nccl-tests `%7.2f`): half their last step.
const BW_HALF_UNIT: f64 = 0.005;

/// Slack for binary floating point on top of the printed rounding.
const EPS: f64 = 1e-9;

/// The first disagreement of `half`'s printed bandwidths with `bytes / time × alg` (and `× bus`
/// for busbw), given the step of the time's last printed digit; `None` when both agree or the
/// log prints none.
pub fn mismatch(bytes: u64, (alg, bus): (f64, f64), half: &Half) -> Option<String> {
    let (lo, hi) = algbw_bounds(bytes, half);
    let (lo, hi) = (lo * alg, hi * alg);
    let checks = [
        ("algbw", half.algbw_gbps, lo, hi),
        ("busbw", half.busbw_gbps, lo * bus, hi * bus),
    ];
    checks.into_iter().find_map(|(name, printed, lo, hi)| {
        let x = printed?;
        let outside = x < lo - BW_HALF_UNIT - EPS || x > hi + BW_HALF_UNIT + EPS;
        outside.then(|| {
            format!(
                "{name} printed {x:.2} GB/s, but {bytes} B in {} us gives {:.2}",
                half.time_us,
                0.5 * (lo + hi)
            )
        })
    })
}

/// The range of algbw (GB/s) that the printed time allows: the time was rounded to its last
/// printed digit.
fn algbw_bounds(bytes: u64, half: &Half) -> (f64, f64) {
    let t_lo = half.time_us - 0.5 * half.time_step_us;
    let t_hi = half.time_us + 0.5 * half.time_step_us;
    let bw = |t_us: f64| bytes as f64 / (t_us * 1e3);
    let hi = if t_lo > 0.0 { bw(t_lo) } else { f64::INFINITY };
    (bw(t_hi), hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half(time_us: f64, step: f64, algbw: f64, busbw: f64) -> Half {
        Half {
            time_us,
            min_us: None,
            max_us: None,
            algbw_gbps: Some(algbw),
            busbw_gbps: Some(busbw),
            wrong: Some(0),
            error: None,
            iters: None,
            time_step_us: step,
            samples: Vec::new(),
            spread: None,
        }
    }

    #[test]
    fn bandwidths_within_the_rounding_agree() {
        // 128 MiB AllReduce on 8 ranks: 134217728 B / 1545.6 us = 86.84 GB/s, x 1.75 = 151.97.
        assert_eq!(
            mismatch(134217728, (1.0, 1.75), &half(1545.6, 0.1, 86.84, 151.97)),
            None
        );
        // A time printed as 10234 (no decimals) allows 13.11..13.12 GB/s for 134217728 B.
        assert_eq!(
            mismatch(134217728, (1.0, 1.0), &half(10234.0, 1.0, 13.12, 13.12)),
            None
        );
        // Tiny messages print 0.00.
        assert_eq!(mismatch(8, (1.0, 1.75), &half(39.51, 0.01, 0.0, 0.0)), None);
    }

    #[test]
    fn a_wrong_factor_is_reported() {
        // busbw printed with the AllGather factor (7/8) where AllReduce's (7/4) applies.
        let m = mismatch(134217728, (1.0, 1.75), &half(1545.6, 0.1, 86.84, 75.98)).unwrap();
        assert!(m.starts_with("busbw printed 75.98 GB/s"), "{m}");
        assert!(mismatch(134217728, (1.0, 1.75), &half(1545.6, 0.1, 80.0, 151.97)).is_some());
    }

    #[test]
    fn hypercube_puts_its_factor_into_algbw() {
        // nccl-tests' hypercube over 4 ranks: 1 MiB in 100 us prints algbw = busbw = 3/4 of
        // 10.49; AllGather's convention (algbw 10.49) is a mismatch there.
        assert_eq!(
            mismatch(1048576, (0.75, 1.0), &half(100.0, 0.1, 7.86, 7.86)),
            None
        );
        assert!(mismatch(1048576, (0.75, 1.0), &half(100.0, 0.1, 10.49, 7.86)).is_some());
    }
}
