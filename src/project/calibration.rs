//! What the roofline leaves out of a step, as a few named parameters of a hardware profile,
//! fitted to published runs (`collbench anchors --calibrate`, [`super::anchors_fit`]):
//!
//! - `compute_scale`: every transformer layer's kernels take this many times their roofline
//!   time (the ceilings a framework's kernels do not reach: tile quantisation, epilogues,
//!   attention kernels below the matrix units' rate);
//! - `memory_scale`: the layer's memory-bound parts (norms, activations, rotary, residuals:
//!   the parts whose bytes outlast their FLOPs) take this many times their roofline time,
//!   where a framework runs them unfused;
//! - `layer_gap_s`: seconds of idle GPU per layer per pass (forward, backward, a recomputed
//!   forward): kernel launches, host-side framework work and stream synchronisation that no
//!   kernel covers.
//!
//! The identity (1, 1, 0) is the roofline itself.

use serde::Serialize;

use super::roofline::UnitSeconds;

/// The calibration of one hardware profile.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub compute_scale: f64,
    pub memory_scale: f64,
    pub layer_gap_s: f64,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration::IDENTITY
    }
}

impl Calibration {
    /// The roofline as it is.
    pub const IDENTITY: Calibration = Calibration {
        compute_scale: 1.0,
        memory_scale: 1.0,
        layer_gap_s: 0.0,
    };

    /// The bounds a fit searches within: kernels from twice as fast as the roofline (which
    /// only a wrong ceiling allows) to four times slower, and up to 50 ms of gaps per layer.
    pub const SCALE_RANGE: (f64, f64) = (0.5, 4.0);
    pub const GAP_RANGE_S: (f64, f64) = (0.0, 0.05);

    pub fn is_identity(&self) -> bool {
        *self == Calibration::IDENTITY
    }

    /// One transformer layer's seconds with this calibration; `passes_bwd` is 2 where the
    /// backward runs a recomputed forward first, else 1.
    pub fn layer(&self, s: UnitSeconds, passes_bwd: f64) -> UnitSeconds {
        if self.is_identity() {
            return s;
        }
        // A pass's memory-bound seconds: one share in forward, one per backward pass and two
        // in the gradient pass (roofline::unit_seconds, UnitSeconds::recomputed).
        let fwd_mb = s.memory_bound / (2.0 + passes_bwd);
        let bwd_mb = s.memory_bound - fwd_mb;
        let (c, m) = (self.compute_scale, self.memory_scale);
        UnitSeconds {
            fwd: (s.fwd - fwd_mb) * c + fwd_mb * m + self.layer_gap_s,
            bwd: (s.bwd - bwd_mb) * c + bwd_mb * m + passes_bwd * self.layer_gap_s,
            memory_bound: s.memory_bound * m,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calibrated_layer_scales_its_kernels_and_adds_a_gap_per_pass() {
        let s = UnitSeconds {
            fwd: 1.0,
            bwd: 2.0,
            memory_bound: 0.5,
        };
        assert_eq!(Calibration::IDENTITY.layer(s, 2.0), s);
        let c = Calibration {
            compute_scale: 1.5,
            memory_scale: 1.0,
            layer_gap_s: 0.25,
        };
        // fwd: 0.875 s compute-bound x1.5 + 0.125 memory-bound + 0.25 gap.
        let l = c.layer(s, 2.0);
        assert!(
            (l.fwd - (0.875 * 1.5 + 0.125 + 0.25)).abs() < 1e-12,
            "{l:?}"
        );
        assert!((l.bwd - (1.625 * 1.5 + 0.375 + 0.5)).abs() < 1e-12, "{l:?}");
        assert_eq!(l.memory_bound, 0.5);
        // Memory-bound parts alone: one pass of backward, a third of them in forward.
        let m = Calibration {
            compute_scale: 1.0,
            memory_scale: 3.0,
            layer_gap_s: 0.0,
        };
        let l = m.layer(s, 1.0);
        assert!((l.fwd - (1.0 + 2.0 * 0.5 / 3.0)).abs() < 1e-12, "{l:?}");
        assert!((l.bwd - (2.0 + 2.0 * 1.0 / 3.0)).abs() < 1e-12, "{l:?}");
    }
}
