//! Axis ranges and tick marks, computed here rather than left to the plotting library so that
//! log axes get ticks at round sizes (powers of two for bytes and GPU counts, decades for
//! times) and labels in the axis's own units. Pure.

use super::figure::{Axis, Scale, TickFormat};
use crate::units::format_size;

/// An axis laid out: the drawn range and the ticks, all in drawing coordinates (the value for
/// a linear axis, its logarithm for a log axis).
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub lo: f64,
    pub hi: f64,
    /// Labelled ticks: position and label.
    pub major: Vec<(f64, String)>,
    /// Unlabelled grid lines.
    pub minor: Vec<f64>,
}

impl Layout {
    /// The label of the tick at `pos` (the plotting library hands positions back).
    pub fn label_at(&self, pos: f64) -> String {
        let tol = (self.hi - self.lo).abs() * 1e-9;
        self.major
            .iter()
            .find(|(p, _)| (p - pos).abs() <= tol)
            .map_or_else(String::new, |(_, l)| l.clone())
    }
}

/// Maps a data value to drawing coordinates.
pub fn to_draw(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log2 => v.log2(),
        Scale::Log10 => v.log10(),
    }
}

/// Maps drawing coordinates back to a data value.
pub fn from_draw(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log2 => v.exp2(),
        Scale::Log10 => 10f64.powf(v),
    }
}

/// Lays out `axis` for data spanning `min..=max` (data units, both drawable on the axis).
/// `from_zero` starts a linear axis at 0 when the data are positive.
pub fn layout(axis: &Axis, min: f64, max: f64, from_zero: bool) -> Layout {
    let (lo, hi) = (to_draw(axis.scale, min), to_draw(axis.scale, max));
    let (major, minor, lo, hi) = match axis.scale {
        Scale::Linear => linear(lo, hi, from_zero, axis.ticks == TickFormat::Count),
        Scale::Log2 => log2(lo, hi),
        Scale::Log10 => log10(lo, hi),
    };
    let major = major
        .into_iter()
        .map(|p| (p, label(axis, from_draw(axis.scale, p))))
        .collect();
    Layout {
        lo,
        hi,
        major,
        minor,
    }
}

type Ticks = (Vec<f64>, Vec<f64>, f64, f64);

/// 1-2-5 steps, about six ticks, range widened to whole steps; for counts, steps of at least
/// one and a little room either side so that end points are not cut.
fn linear(min: f64, max: f64, from_zero: bool, count: bool) -> Ticks {
    let mut lo = if from_zero && min >= 0.0 { 0.0 } else { min };
    let mut hi = max;
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
        lo = if from_zero && lo >= 0.0 {
            0.0
        } else {
            lo - pad
        };
        hi += pad;
    }
    let mut step = nice_step((hi - lo) / 5.0);
    if count {
        step = step.max(1.0);
    }
    let lo = (lo / step).floor() * step;
    let mut hi = (hi / step).ceil() * step;
    if hi - max < 0.03 * (hi - lo) && from_zero {
        // Room above the highest point, so that it does not sit on the frame.
        hi += step;
    }
    let n = ((hi - lo) / step).round() as i64;
    let major: Vec<f64> = (0..=n).map(|i| lo + i as f64 * step).collect();
    if count {
        return (major.clone(), major, lo - 0.3 * step, hi + 0.3 * step);
    }
    let minor = (0..2 * n + 1).map(|i| lo + i as f64 * step / 2.0).collect();
    (major, minor, lo, hi)
}

/// The 1, 2 or 5 × 10^k at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    let exp = raw.log10().floor();
    let base = 10f64.powf(exp);
    let m = raw / base;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * base
}

/// Powers of two, every 1, 2, 5 or 10 octaves (at most twelve labels); a grid line per
/// octave.
fn log2(lo: f64, hi: f64) -> Ticks {
    let (lo, hi) = (lo - 0.3, hi + 0.3);
    let (first, last) = (lo.ceil() as i64, hi.floor() as i64);
    let span = (last - first).max(0);
    let step = [1, 2, 5, 10, 20]
        .into_iter()
        .find(|s| span / s < 12)
        .unwrap_or(50);
    let major = (first..=last)
        .filter(|e| e.rem_euclid(step) == 0)
        .map(|e| e as f64)
        .collect();
    let minor = (first..=last).map(|e| e as f64).collect();
    (major, minor, lo, hi)
}

/// Decades (every 1, 2 or 3 when many); 1-2-5 within a decade or two; grid at 1..9 × 10^k.
fn log10(lo: f64, hi: f64) -> Ticks {
    let (lo, hi) = (lo - 0.08, hi + 0.08);
    let (first, last) = (lo.floor() as i64, hi.ceil() as i64);
    let span = hi - lo;
    let step = [1, 2, 3, 5]
        .into_iter()
        .find(|s| (span as i64) / s < 8)
        .unwrap_or(10);
    let mantissas: &[f64] = if span < 1.2 {
        &[1.0, 2.0, 3.0, 5.0]
    } else if span < 2.5 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let mut major = Vec::new();
    let mut minor = Vec::new();
    for e in first..=last {
        for m in 1..10 {
            let p = (m as f64).log10() + e as f64;
            let labelled = mantissas.contains(&(m as f64)) && (m > 1 || e.rem_euclid(step) == 0);
            if p < lo || p > hi {
                continue;
            }
            if labelled {
                major.push(p);
            }
            if step == 1 || m == 1 {
                minor.push(p);
            }
        }
    }
    (major, minor, lo, hi)
}

/// A tick label in the axis's format.
pub fn label(axis: &Axis, v: f64) -> String {
    match axis.ticks {
        TickFormat::Bytes => format_size(v.round().max(0.0) as usize),
        TickFormat::Number | TickFormat::Count => number(v),
        TickFormat::Percent => format!("{}%", number(v * 100.0)),
    }
}

/// A short plain number: `0`, `0.25`, `20`, `1000`, `1e6`, `2e-5`.
pub fn number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        return format!("{v:.0e}");
    }
    let mut s = format!("{v:.3}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(scale: Scale, ticks: TickFormat) -> Axis {
        Axis::new("x", scale, ticks)
    }

    fn labels(l: &Layout) -> Vec<&str> {
        l.major.iter().map(|(_, s)| s.as_str()).collect()
    }

    #[test]
    fn bytes_ticks_are_round_sizes() {
        let l = layout(
            &axis(Scale::Log2, TickFormat::Bytes),
            8.0,
            64.0 * 1048576.0,
            false,
        );
        assert_eq!(
            labels(&l),
            [
                "16 B", "64 B", "256 B", "1 KiB", "4 KiB", "16 KiB", "64 KiB", "256 KiB", "1 MiB",
                "4 MiB", "16 MiB", "64 MiB"
            ]
        );
        assert_eq!(l.minor.len(), 24);
        let l = layout(&axis(Scale::Log2, TickFormat::Number), 8.0, 2048.0, false);
        assert_eq!(
            labels(&l),
            ["8", "16", "32", "64", "128", "256", "512", "1024", "2048"]
        );
        assert_eq!(l.label_at(l.major[2].0), "32");
    }

    #[test]
    fn time_ticks_are_decades_or_1_2_5() {
        let l = layout(&axis(Scale::Log10, TickFormat::Number), 3.0, 40000.0, false);
        assert_eq!(labels(&l), ["10", "100", "1000", "10000"]);
        let l = layout(&axis(Scale::Log10, TickFormat::Number), 20.0, 60.0, false);
        assert_eq!(labels(&l), ["20", "30", "50"]);
    }

    #[test]
    fn linear_ticks_start_at_zero_when_asked() {
        let l = layout(&axis(Scale::Linear, TickFormat::Number), 1.2, 9.3, true);
        assert_eq!(labels(&l), ["0", "2", "4", "6", "8", "10"]);
        assert_eq!((l.lo, l.hi), (0.0, 10.0));
        let l = layout(&axis(Scale::Linear, TickFormat::Number), 1.2, 9.9, true);
        assert_eq!(l.hi, 12.0);
        let l = layout(&axis(Scale::Linear, TickFormat::Percent), 0.3, 0.3, true);
        assert_eq!(l.major.first().unwrap().1, "0%");
        assert!(l.hi > 0.3);
        let l = layout(&axis(Scale::Linear, TickFormat::Count), 2.0, 4.0, false);
        assert_eq!(labels(&l), ["2", "3", "4"]);
        assert!(l.lo < 2.0 && l.hi > 4.0);
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(1000.0), "1000");
        assert_eq!(number(1e6), "1e6");
        assert_eq!(number(2e-5), "2e-5");
    }
}
