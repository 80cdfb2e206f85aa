//! The measured overlap slowdowns at each message size (`sweep --with-compute`, fit.json
//! `slowdowns[].points`), so that an overlapped collective takes the slowdowns measured at its
//! own size: a GEMM beside a 64 KiB ReduceScatter is slowed less than beside a 256 MiB one.
//! Between measured sizes the slowdowns are interpolated in log size; outside them the nearest
//! end's are taken (a fit says nothing of sizes it did not measure, and extrapolating a ratio
//! invites nonsense).

/// The most sizes kept; a longer curve is thinned evenly (keeping both ends), so that the
/// table stays a small `Copy` value inside the step model's options.
pub const MAX_SIZES: usize = 16;

/// One size's slowdowns: σ (the compute's slowdown − 1, at least 0) and the collective's (at
/// least 1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SizeSlowdowns {
    pub bytes: f64,
    pub sigma: f64,
    pub comm: f64,
}

/// The slowdowns by size, ascending; empty where none was measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OverlapSizes {
    len: usize,
    at: [SizeSlowdowns; MAX_SIZES],
}

impl OverlapSizes {
    /// The table of `points` (any order; several at one size are combined by their medians;
    /// non-finite or non-positive sizes and values left out).
    pub fn of(points: &[SizeSlowdowns]) -> OverlapSizes {
        let mut sizes: Vec<f64> = (points.iter())
            .filter(|p| usable(p))
            .map(|p| p.bytes)
            .collect();
        sizes.sort_by(f64::total_cmp);
        sizes.dedup();
        let combined: Vec<SizeSlowdowns> = sizes
            .iter()
            .map(|&bytes| {
                let here = points.iter().filter(|p| p.bytes == bytes && usable(p));
                let (sigma, comm): (Vec<f64>, Vec<f64>) = here.map(|p| (p.sigma, p.comm)).unzip();
                SizeSlowdowns {
                    bytes,
                    sigma: median(sigma).max(0.0),
                    comm: median(comm).max(1.0),
                }
            })
            .collect();
        let mut table = OverlapSizes::default();
        for (slot, kept) in table.at.iter_mut().zip(thinned(&combined)) {
            *slot = kept;
            table.len += 1;
        }
        table
    }

    /// The sizes kept, ascending.
    pub fn sizes(&self) -> &[SizeSlowdowns] {
        &self.at[..self.len]
    }

    /// σ and the collective's slowdown at `bytes`; `None` for an empty table.
    pub fn at(&self, bytes: f64) -> Option<(f64, f64)> {
        let s = self.sizes();
        let (first, last) = (s.first()?, s.last()?);
        // At or below the first size, and for a size that is no number.
        if bytes.is_nan() || bytes <= first.bytes {
            return Some((first.sigma, first.comm));
        }
        if bytes >= last.bytes {
            return Some((last.sigma, last.comm));
        }
        let i = s.iter().position(|p| p.bytes > bytes)?;
        let (a, b) = (s[i - 1], s[i]);
        let t = (bytes.ln() - a.bytes.ln()) / (b.bytes.ln() - a.bytes.ln());
        let lerp = |x: f64, y: f64| x + t * (y - x);
        Some((lerp(a.sigma, b.sigma), lerp(a.comm, b.comm)))
    }
}

fn usable(p: &SizeSlowdowns) -> bool {
    p.bytes.is_finite() && p.bytes > 0.0 && p.sigma.is_finite() && p.comm.is_finite()
}

fn median(mut v: Vec<f64>) -> f64 {
    crate::stats::median_of(&mut v)
}

/// At most [`MAX_SIZES`] of `all`, evenly spread, the first and last kept.
fn thinned(all: &[SizeSlowdowns]) -> Vec<SizeSlowdowns> {
    if all.len() <= MAX_SIZES {
        return all.to_vec();
    }
    let step = (all.len() - 1) as f64 / (MAX_SIZES - 1) as f64;
    (0..MAX_SIZES)
        .map(|k| all[((k as f64 * step).round() as usize).min(all.len() - 1)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(bytes: f64, sigma: f64, comm: f64) -> SizeSlowdowns {
        SizeSlowdowns { bytes, sigma, comm }
    }

    #[test]
    fn sizes_between_are_interpolated_in_log_size_and_outside_held_at_the_ends() {
        let t = OverlapSizes::of(&[at(4096.0, 0.4, 1.4), at(1024.0, 0.2, 1.2)]);
        assert_eq!(t.sizes().len(), 2);
        assert_eq!(t.at(1024.0), Some((0.2, 1.2)));
        // 2048 is halfway between 1024 and 4096 in log size.
        let (s, c) = t.at(2048.0).unwrap();
        assert!(
            (s - 0.3).abs() < 1e-12 && (c - 1.3).abs() < 1e-12,
            "{s} {c}"
        );
        assert_eq!(t.at(1.0), Some((0.2, 1.2)));
        assert_eq!(t.at(1e12), Some((0.4, 1.4)));
        assert_eq!(t.at(f64::NAN), Some((0.2, 1.2)));
        assert_eq!(OverlapSizes::default().at(1024.0), None);
    }

    #[test]
    fn one_size_of_several_curves_is_their_median_held_at_no_speedup() {
        let t = OverlapSizes::of(&[
            at(1024.0, 0.1, 1.1),
            at(1024.0, -0.2, 0.9),
            at(1024.0, 0.3, 1.5),
            at(f64::NAN, 9.0, 9.0),
            at(2048.0, f64::INFINITY, 1.0),
        ]);
        assert_eq!(t.sizes(), &[at(1024.0, 0.1, 1.1)]);
        let t = OverlapSizes::of(&[at(1024.0, -0.5, 0.5)]);
        assert_eq!(t.at(1024.0), Some((0.0, 1.0)));
    }

    #[test]
    fn a_long_curve_is_thinned_to_the_most_sizes_keeping_both_ends() {
        // 40 sizes, given largest first.
        let all: Vec<SizeSlowdowns> = (0..40)
            .rev()
            .map(|i| at(1000.0 * f64::from(i + 1), 0.01 * f64::from(i), 1.0))
            .collect();
        let t = OverlapSizes::of(&all);
        let s = t.sizes();
        assert_eq!(s.len(), MAX_SIZES);
        assert!(s.windows(2).all(|w| w[0].bytes < w[1].bytes));
        assert_eq!((s[0].bytes, s[MAX_SIZES - 1].bytes), (1000.0, 40_000.0));
    }
}
