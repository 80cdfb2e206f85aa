//! The one rule by which every reader of numbers from users and files (hardware and model
//! specs, fit.json, summary.csv, command-line counts) refuses values no machine can have:
//! each quantity has a named [`Range`] in its unit, and a value outside it, or not finite, is
//! refused with one line that names the field, the value, the range and the unit.
//!
//! The ranges are wide on purpose: they admit any real or plausible future machine (a GPU of
//! 100 PFLOP/s, a link of 100 TB/s) and refuse only the absurd (negative or zero rates, NaN,
//! 1e300), and every count that sizes memory or a loop is capped before anything allocates.
//! Vocabulary level: no I/O, no knowledge of any file format.

use std::fmt::Display;

/// The closed or half-open interval a quantity must lie in, with its unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// The unit as written after the value ("GB/s", "µs", "" for a pure number).
    pub unit: &'static str,
    pub min: f64,
    /// Whether `min` itself is allowed (false: the value must exceed it).
    pub min_allowed: bool,
    pub max: f64,
}

impl Range {
    /// Values in `(min, max]`: a quantity that must be positive.
    pub const fn positive(unit: &'static str, max: f64) -> Range {
        Range {
            unit,
            min: 0.0,
            min_allowed: false,
            max,
        }
    }

    /// Values in `[min, max]`.
    pub const fn between(unit: &'static str, min: f64, max: f64) -> Range {
        Range {
            unit,
            min,
            min_allowed: true,
            max,
        }
    }

    /// Whether `x` lies in the range (NaN and infinities never do).
    pub fn contains(&self, x: f64) -> bool {
        let above = if self.min_allowed {
            x >= self.min
        } else {
            x > self.min
        };
        x.is_finite() && above && x <= self.max
    }

    /// The range as a reader sees it: `(0, 100000] GB/s`.
    pub fn describe(&self) -> String {
        let open = if self.min_allowed { '[' } else { '(' };
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        format!("{open}{}, {}]{unit}", number(self.min), number(self.max))
    }

    /// `Ok(x)` inside the range; otherwise a message naming `field`, the value and the range.
    pub fn check(&self, field: &str, x: f64) -> Result<f64, String> {
        if self.contains(x) {
            return Ok(x);
        }
        Err(format!(
            "{field} = {} is outside {}; give a physical value in that range",
            number(x),
            self.describe()
        ))
    }
}

/// A number as a reader can take it in: `1e300`, not three hundred digits.
pub fn number(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && a.is_finite() && !(1e-4..1e9).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A whole-number count that may size memory or a loop: `min..=max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    pub min: u64,
    pub max: u64,
}

impl Count {
    /// `Ok(n)` inside `min..=max`; otherwise a message naming `field`, the value and the range.
    pub fn check<N: Copy + Into<u128> + Display>(&self, field: &str, n: N) -> Result<N, String> {
        let v: u128 = n.into();
        if v >= u128::from(self.min) && v <= u128::from(self.max) {
            return Ok(n);
        }
        Err(format!(
            "{field} = {n} is outside {}..={}; give a value in that range",
            self.min, self.max
        ))
    }

    /// As [`Count::check`] for a `usize`.
    pub fn check_usize(&self, field: &str, n: usize) -> Result<usize, String> {
        self.check(field, n as u64).map(|_| n)
    }
}

/// Bandwidths of links and networks, GB/s (10⁹ B/s): from 1 kB/s to 100 TB/s.
pub const RATE_GBPS: Range = Range::between("GB/s", 1e-6, 1e5);
/// Bandwidths where 0 is meaningful (busbw of a one-rank world), GB/s.
pub const RATE_GBPS_OR_ZERO: Range = Range::between("GB/s", 0.0, 1e5);
/// A measured algorithm bandwidth, GB/s: positive, and loose above, because a one-rank point
/// moves nothing and reports its bytes over a timer tick (1 TiB in 1 ns is 10¹² GB/s).
pub const MEASURED_GBPS: Range = Range::positive("GB/s", 1e12);
/// A measured bus bandwidth, GB/s: as [`MEASURED_GBPS`], and 0 for a one-rank world.
pub const MEASURED_GBPS_OR_ZERO: Range = Range::between("GB/s", 0.0, 1e12);
/// Memory bandwidth, TB/s: from 1 kB/s to 1 PB/s.
pub const RATE_TBPS: Range = Range::between("TB/s", 1e-9, 1e3);
/// Peak compute of one accelerator, TFLOP/s: from 1 MFLOP/s to 100 PFLOP/s.
pub const COMPUTE_TFLOPS: Range = Range::between("TFLOP/s", 1e-6, 1e5);
/// Memory of one accelerator, GB: from 1 kB to 1 PB.
pub const MEMORY_GB: Range = Range::between("GB", 1e-6, 1e6);
/// Power of one accelerator, W: up to 100 kW.
pub const POWER_W: Range = Range::between("W", 0.0, 1e5);
/// A duration that must be positive (a measured time), µs: up to 10⁶ s.
pub const TIME_US: Range = Range::positive("µs", 1e12);
/// A duration, latency or spread that may be 0 (a fitted latency held at its bound), µs.
pub const TIME_US_OR_ZERO: Range = Range::between("µs", 0.0, 1e12);
/// An inverse bandwidth, ns per byte (1 ns/B is 1 GB/s): down to 1 byte per second.
pub const NS_PER_BYTE: Range = Range::between("ns/B", 0.0, 1e9);
/// A ratio or relative error that may be large but not negative (0.05 = 5%).
pub const RATIO: Range = Range::between("", 0.0, 1e6);
/// A probability or fraction of one.
pub const FRACTION: Range = Range::between("", 0.0, 1.0);

/// Ranks in one world (and world sizes a projection may ask for): up to 2^20 GPUs.
pub const WORLD: Count = Count {
    min: 1,
    max: 1 << 20,
};
/// Bytes of one collective call: up to 1 TiB.
pub const BYTES: Count = Count {
    min: 1,
    max: 1 << 40,
};
/// Iterations or steps of a measurement: up to 10⁹.
pub const ITERS: Count = Count {
    min: 1,
    max: 1_000_000_000,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_refuse_the_absurd_and_say_why() {
        assert!(RATE_GBPS.contains(400.0));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            assert!(!RATE_GBPS.contains(bad), "{bad}");
        }
        assert!(RATE_GBPS_OR_ZERO.contains(0.0));
        let e = COMPUTE_TFLOPS.check("peak_tflops", 1e300).unwrap_err();
        assert_eq!(
            e,
            "peak_tflops = 1e300 is outside [1e-6, 100000] TFLOP/s; give a physical value in that range"
        );
        assert!(FRACTION.check("x", 0.5).is_ok());
    }

    #[test]
    fn counts_check_any_width() {
        assert_eq!(WORLD.check_usize("world", 8), Ok(8));
        let e = WORLD.check("world", u64::MAX).unwrap_err();
        assert!(
            e.contains("18446744073709551615") && e.contains("1..=1048576"),
            "{e}"
        );
        assert!(WORLD.check_usize("world", 0).is_err());
    }
}
