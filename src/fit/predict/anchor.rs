//! Beyond the largest fitted world, a prediction keeps what the largest world measured and
//! takes only the scaling from the model: `T(N, S) = measured(W, S) · model(N, S) / model(W, S)`.
//!
//! One line per size range cannot follow everything a library does between sizes (NCCL
//! switches protocol and algorithm; a fabric has its own regimes), but the measured curve at
//! the largest world already holds it. Anchoring is used where it predicted the model's own
//! largest world from the smaller ones at least as well as the plain model (fit.json
//! `extrapolation.anchored_rel_err_mean` against `rel_err_mean`). On public nccl-tests logs of 1 to 512 nodes this
//! anchoring predicted 8x beyond the fitted worlds better than both the plain model and the
//! naive same-busbw guess (docs/METHODOLOGY.md, "Extrapolation on public data").

use serde::Serialize;

use super::super::schema::{CurveFit, FitFile, WorldModel};

/// The measurement a prediction was anchored on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Anchor {
    pub world: usize,
    pub nodes: usize,
    /// The curve's time at the query's size, µs: the median of the size when measured, else
    /// its regime's line.
    pub measured_us: f64,
    /// Whether the size itself was measured.
    pub size_measured: bool,
}

/// The fit's curve of the model's key at its largest fitted world, and its time at `bytes`.
pub fn anchor(fit: &FitFile, m: &WorldModel, bytes: usize) -> Option<Anchor> {
    let (i, &world) = m.worlds.iter().enumerate().max_by_key(|(_, w)| **w)?;
    let nodes = m.nodes.get(i).copied().unwrap_or(1);
    let curve = fit.curves.iter().find(|c| same_key(c, m, world, nodes))?;
    let exact = curve.points.iter().find(|p| p.bytes == bytes as u64);
    let (measured_us, size_measured) = match exact {
        Some(p) => (p.measured_us, true),
        None => (curve.regime(bytes as f64).time_us(bytes as f64), false),
    };
    (measured_us > 0.0 && measured_us.is_finite()).then_some(Anchor {
        world,
        nodes,
        measured_us,
        size_measured,
    })
}

fn same_key(c: &CurveFit, m: &WorldModel, world: usize, nodes: usize) -> bool {
    let k = &c.key;
    (
        &k.backend, k.op, k.algo, k.dtype, k.in_place, k.proto, k.comm,
    ) == (
        &m.backend, m.op, m.algo, m.dtype, m.in_place, m.proto, m.comm,
    ) && (k.world, k.nodes.max(1)) == (world, nodes.max(1))
}
