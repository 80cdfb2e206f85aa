//! How much overlapped compute and communication slow each other in a projection: the fit's
//! measured slowdowns (`sweep --with-compute`, fit.json `slowdowns`) where it has them and
//! `--overlap-slowdown` was not given, else that flag, else the published default σ = 0.19 (Lee
//! et al. 2025, arXiv 2507.03114: the compute slowdown under overlapped communication, an
//! average over GPUs), with communication as fast as alone.

use serde::Serialize;

use super::overlap_sizes::{OverlapSizes, SizeSlowdowns};
use crate::fit::schema::{FitFile, SlowdownCurve};

/// The default compute slowdown under overlapped communication: 18.9% on average (40% at most)
/// on A100, H100, MI250 and MI210 (Lee et al. 2025, arXiv 2507.03114).
pub const DEFAULT_SIGMA: f64 = 0.19;

/// Where the overlap slowdowns came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OverlapSource {
    /// σ = 0.19, communication unslowed.
    Default,
    /// `--overlap-slowdown`.
    Given,
    /// The fit's slowdowns beside a compute load.
    Measured,
}

/// The fit's measured overlap: σ (the compute's slowdown − 1) and the collectives' slowdown.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredOverlap {
    /// `compute gemm`, `compute cache` or `compute memory`: the load whose slowdowns were taken.
    pub load: String,
    pub sigma: f64,
    pub comm: f64,
    /// Sizes (over every op measured beside that load) the medians are taken over.
    pub sizes: usize,
    /// The slowdowns at each size, which the step model takes at each collective's size.
    pub by_size: OverlapSizes,
}

/// The loads in the order they stand for a training step's overlapped compute: cuBLAS GEMMs
/// beside NCCL on the GPU itself (`gemm`), then the host's stand-ins: a GEMM mostly competes for
/// the compute units (`cache`), an elementwise kernel for memory (`memory`).
const LOADS: [&str; 3] = ["compute gemm", "compute cache", "compute memory"];

/// The fit's overlap beside the first load of [`LOADS`] it measured: the medians over every size
/// of every op of the compute's slowdown and the call's; `None` where it measured none, or no
/// compute rate could be taken. Below 1 (faster beside compute: noise) counts as 1.
pub fn measured(fit: &FitFile) -> Option<MeasuredOverlap> {
    LOADS.iter().find_map(|load| {
        let curves = (fit.slowdowns.iter()).filter(|c| c.concurrent == *load);
        of_curves(load, curves.collect())
    })
}

fn of_curves(load: &str, curves: Vec<&SlowdownCurve>) -> Option<MeasuredOverlap> {
    // The sizes where both slowdowns were taken: the medians and the table from the same ones.
    let points =
        (curves.iter().flat_map(|c| &c.points)).filter(|p| p.compute_slowdown_median.is_some());
    let compute: Vec<f64> = points
        .clone()
        .filter_map(|p| p.compute_slowdown_median)
        .collect();
    let comm: Vec<f64> = points.clone().map(|p| p.slowdown_median).collect();
    let sizes = comm.len();
    let at_sizes: Vec<SizeSlowdowns> = points
        .filter_map(|p| {
            Some(SizeSlowdowns {
                bytes: p.bytes as f64,
                sigma: p.compute_slowdown_median? - 1.0,
                comm: p.slowdown_median,
            })
        })
        .collect();
    Some(MeasuredOverlap {
        load: load.to_string(),
        sigma: median_slowdown(compute)? - 1.0,
        comm: median_slowdown(comm)?,
        sizes,
        by_size: OverlapSizes::of(&at_sizes),
    })
}

/// The median of measured slowdowns (time or rate beside others over alone), below 1 (faster
/// beside others: noise) counted as 1; `None` without any.
pub(super) fn median_slowdown(mut v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| crate::stats::median_of(&mut v).max(1.0))
}

/// How long two transfers of `t` and `u` seconds alone take started together, each taking
/// `a` (`t`'s) and `b` (`u`'s) times as long while the other runs: the one that ends first
/// ends at its slowed time, and the rest of the other then runs alone.
pub(super) fn both_at_once(t: f64, u: f64, (a, b): (f64, f64)) -> f64 {
    if t * a <= u * b {
        t * a + (u - t * a / b)
    } else {
        u * b + (t - u * b / a)
    }
}

/// Running sums of a stage's timeline: compute, its slowdown beside communication, and the
/// communication exposed and hidden.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Acc {
    pub compute: f64,
    pub slowdown: f64,
    pub exposed: f64,
    pub hidden: f64,
}

impl Acc {
    /// Compute `c` with communication `x` beside it; the communication left exposed after it.
    pub fn window(&mut self, c: f64, x: f64, sigma: f64) -> f64 {
        self.compute += c;
        let stretched = c * (1.0 + sigma);
        if x >= stretched {
            self.slowdown += sigma * c;
            self.exposed += x - stretched;
            self.hidden += stretched;
            x - stretched
        } else {
            self.slowdown += x * sigma / (1.0 + sigma);
            self.hidden += x;
            0.0
        }
    }

    /// Blocking communication `t` after a window that left `left` exposed: one after the
    /// other, or at once where `at_once` gives their slowdowns beside each other (`t`'s, then
    /// `left`'s).
    pub fn tp_beside(&mut self, left: f64, t: f64, at_once: Option<(f64, f64)>) {
        match at_once.filter(|_| left > 0.0 && t > 0.0) {
            Some((a, b)) => {
                let together = both_at_once(t, left, (a, b));
                // `left` is counted exposed already.
                self.exposed += together - left;
                self.hidden += (left + t - together).max(0.0);
            }
            None => self.blocking(t),
        }
    }

    /// Communication with nothing to hide behind.
    pub fn blocking(&mut self, x: f64) {
        self.exposed += x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::slowdowns::test_curve;

    /// Points at 1 KiB, 2 KiB, ... of `(call, compute)` slowdowns.
    fn curve(load: &str, points: &[(f64, Option<f64>)]) -> SlowdownCurve {
        let at: Vec<_> = (points.iter().enumerate())
            .map(|(i, &(s, c))| (1 << (10 + i), s, c))
            .collect();
        test_curve(load, &at)
    }

    #[test]
    fn the_gemm_then_the_cache_load_is_taken_first_and_its_medians_held_at_one_or_more() {
        let mut fit = crate::fit::export::testfit::ring_fit();
        assert_eq!(measured(&fit), None);
        fit.slowdowns = vec![
            curve("compute memory", &[(1.5, Some(3.0))]),
            curve("split %2", &[(2.0, None)]),
        ];
        let m = measured(&fit).unwrap();
        assert_eq!(
            (m.load.as_str(), m.sigma, m.comm),
            ("compute memory", 2.0, 1.5)
        );
        fit.slowdowns.push(curve(
            "compute cache",
            &[(1.1, Some(1.2)), (0.9, Some(1.4)), (1.3, None)],
        ));
        let m = measured(&fit).unwrap();
        assert_eq!(
            (m.load.as_str(), m.sizes, m.comm),
            // The size without a compute slowdown counts in neither median.
            ("compute cache", 2, 1.0)
        );
        assert!((m.sigma - 0.3).abs() < 1e-12, "{m:?}");
        // The GPU's own GEMMs stand before any host load.
        fit.slowdowns
            .push(curve("compute gemm", &[(1.05, Some(1.25))]));
        let m = measured(&fit).unwrap();
        assert_eq!(
            (m.load.as_str(), m.sizes, m.comm),
            ("compute gemm", 1, 1.05)
        );
        assert!((m.sigma - 0.25).abs() < 1e-12, "{m:?}");
        fit.slowdowns = vec![curve("compute cache", &[(0.8, Some(0.9))])];
        let m = measured(&fit).unwrap();
        assert_eq!((m.sigma, m.comm), (0.0, 1.0));
        fit.slowdowns = vec![curve("compute cache", &[(1.2, None)])];
        assert_eq!(measured(&fit), None);
    }
}
