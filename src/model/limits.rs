//! Upper bounds of the sweep's numbers that size memory or time, checked before anything is
//! allocated or started: a typo such as `--iters 18446744073709551615` is one line and exit 2,
//! not an allocation failure in every rank or a run that never ends.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::record::IterSample;

/// Most timed iterations per point: 8 MB of samples per rank, and far more than any
/// percentile needs.
pub const MAX_ITERS: usize = 1_000_000;
/// Most warm-up iterations per point.
pub const MAX_WARMUP: usize = 1_000_000;
/// Longest `--timeout`: a rank silent for a day is stuck.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Refuses iteration counts over the limits.
pub fn check_counts(iters: Option<usize>, warmup: Option<usize>) -> Result<()> {
    let over = |flag: &str, value: usize, limit: usize, why: &str| {
        Error::usage(format!(
            "{flag} {value} is over the limit of {limit} per point; give at most {limit} ({why})"
        ))
    };
    if let Some(n) = iters.filter(|&n| n > MAX_ITERS) {
        return Err(over(
            "--iters",
            n,
            MAX_ITERS,
            "repeat the sweep for more samples",
        ));
    }
    if let Some(n) = warmup.filter(|&n| n > MAX_WARMUP) {
        return Err(over(
            "--warmup",
            n,
            MAX_WARMUP,
            "a few hundred warm any path",
        ));
    }
    Ok(())
}

/// Refuses a `--timeout` over [`MAX_TIMEOUT`].
pub fn check_timeout(timeout: Duration) -> Result<Duration> {
    check_timeout_flag("--timeout", timeout)
}

/// Refuses a timeout given as `flag` over [`MAX_TIMEOUT`].
pub fn check_timeout_flag(flag: &str, timeout: Duration) -> Result<Duration> {
    if timeout > MAX_TIMEOUT {
        return Err(Error::usage(format!(
            "{flag} {} is over the limit of {}; give at most 24h",
            humantime::format_duration(timeout),
            humantime::format_duration(MAX_TIMEOUT)
        )));
    }
    Ok(timeout)
}

/// Bytes of per-iteration samples a launch of `ranks` ranks holds at `max_iters` timed
/// iterations: each rank's times, their copy in the shared segment and in the launcher, and
/// the launcher's per-iteration records.
pub fn sample_bytes(ranks: usize, max_iters: usize) -> u128 {
    let per_rank = 3 * std::mem::size_of::<f64>() as u128;
    let record = std::mem::size_of::<IterSample>() as u128;
    max_iters as u128 * (ranks as u128 * per_rank + record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_over_the_limits_are_refused_with_the_value_and_the_limit() {
        assert!(check_counts(Some(MAX_ITERS), Some(MAX_WARMUP)).is_ok());
        let e = check_counts(Some(usize::MAX), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--iters 18446744073709551615") && e.contains("1000000"),
            "{e}"
        );
        let e = check_counts(None, Some(MAX_WARMUP + 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--warmup 1000001"), "{e}");
        assert!(check_timeout(Duration::from_secs(u64::MAX)).is_err());
    }

    #[test]
    fn sample_bytes_grow_with_ranks_and_iterations() {
        assert_eq!(sample_bytes(0, 0), 0);
        assert!(sample_bytes(256, MAX_ITERS) > 256 * MAX_ITERS as u128 * 8 * 3);
    }
}
