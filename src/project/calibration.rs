//! What the roofline leaves out of a step, as a few named parameters of a hardware profile,
//! fitted to published runs (`collbench anchors --calibrate`, [`super::anchors_fit`]):
//!
//! - `compute_scale`: every transformer layer's kernels take this many times their roofline
//!   time (the ceilings a framework's kernels do not reach: tile quantisation, epilogues,
//!   attention kernels below the matrix units' rate);
//! - `layer_gap_s`: seconds of idle GPU per layer per pass (forward, backward, a recomputed
//!   forward): kernel launches, host-side framework work and stream synchronisation that no
//!   kernel covers.
//!
//! The identity (1, 0) is the roofline itself.

use serde::Serialize;

use super::roofline::UnitSeconds;

/// The calibration of one hardware profile.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Calibration {
    pub compute_scale: f64,
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
        UnitSeconds {
            fwd: s.fwd * self.compute_scale + self.layer_gap_s,
            bwd: s.bwd * self.compute_scale + passes_bwd * self.layer_gap_s,
            memory_bound: s.memory_bound * self.compute_scale,
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
            layer_gap_s: 0.25,
        };
        assert_eq!(
            c.layer(s, 2.0),
            UnitSeconds {
                fwd: 1.75,
                bwd: 3.5,
                memory_bound: 0.75
            }
        );
        assert_eq!(c.layer(s, 1.0).bwd, 3.25);
    }
}
