//! The scaling-efficiency metrics of the primer (`../shared/reference/
//! scaling-efficiency-primer.txt`; definitions in docs/METHODOLOGY.md, "Scaling efficiency"),
//! per row and per layout. Pure.
//!
//! - speedup `S(N)` = tokens/s at N / tokens/s at N₀, N₀ the layout's smallest projected world:
//!   `T(N₀)/T(N)` in strong scaling, `(N/N₀)·T(N₀)/T(N)` (Gustafson's scaled speedup) in weak;
//!   ideal `N/N₀`.
//! - parallel efficiency `E(N) = T(1)/(N·T(N))`, `T(1)` the step's work on one GPU at the compute
//!   kernels' rate with nothing else (no communication, bubble or slowdown): `MFU / compute
//!   efficiency`.
//! - scaling efficiency `SE(N) = E(N)/E(N₀) = S(N)·N₀/N`.
//! - communication-to-computation ratio `(exposed + overlapped communication) / compute`; the
//!   critical scale N_crit is where it crosses 1, linear in ln N between the two worlds around
//!   the first crossing.
//! - bound class: memory, communication or compute ([`bound`]).

use serde::Serialize;

use super::metrics::Metrics;
use super::row::Row;
use super::stepfit::{step_fit, StepFit};

/// Share of HBM from which a row is memory-bound (the primer's "memory utilization > 95%").
pub const MEMORY_BOUND_FRAC: f64 = 0.95;
/// Exposed-communication share of the step from which a row is communication-bound (the
/// primer's "communication time > 30% of iteration time").
pub const COMM_BOUND_FRAC: f64 = 0.30;

pub use super::row::Bound;

/// The first rule that holds, in order: memory-bound when the row needs at least
/// [`MEMORY_BOUND_FRAC`] of HBM (or was not projected for lack of it); communication-bound
/// when communication lasts at least as long as compute (it can no longer hide) or the exposed
/// part exceeds [`COMM_BOUND_FRAC`] of the step; else compute-bound.
pub fn bound(memory_gb: f64, hbm_gb: f64, m: Option<&Metrics>) -> Bound {
    let Some(m) = m else { return Bound::Memory };
    if memory_gb >= MEMORY_BOUND_FRAC * hbm_gb {
        return Bound::Memory;
    }
    let past_critical = comm_compute_ratio(m).map_or(true, |r| r >= 1.0);
    if past_critical || m.exposed_comm_frac > COMM_BOUND_FRAC {
        Bound::Communication
    } else {
        Bound::Compute
    }
}

/// `(exposed + overlapped communication) / compute`; `None` without compute.
pub fn comm_compute_ratio(m: &Metrics) -> Option<f64> {
    (m.compute_s > 0.0).then(|| (m.exposed_comm_s + m.overlapped_comm_s) / m.compute_s)
}

/// `(S(N), SE(N))` of `world` with `tokens_per_s` against the baseline `(N₀, tokens/s)`.
pub fn against(base: (usize, f64), world: usize, tokens_per_s: f64) -> (f64, f64) {
    let speedup = tokens_per_s / base.1;
    (speedup, speedup * base.0 as f64 / world as f64)
}

/// A layout's key: (tp, pp, ep).
pub(super) type Key = (usize, usize, usize);

pub(super) fn key(r: &Row) -> Key {
    (r.tp, r.pp, r.ep)
}

/// A layout as notes name it: `tp 2 pp 1`, with ` ep 8` when expert-parallel.
pub fn layout_name(tp: usize, pp: usize, ep: usize) -> String {
    if ep > 1 {
        format!("tp {tp} pp {pp} ep {ep}")
    } else {
        format!("tp {tp} pp {pp}")
    }
}

/// Fills the scaling fields of rows in world order: the baseline of each (tp, pp, ep) is its
/// first projected row.
pub fn annotate(rows: &mut [Row], hbm_gb: f64, compute_efficiency: Option<f64>) {
    for i in 0..rows.len() {
        let r = &rows[i];
        let base = rows[..=i]
            .iter()
            .filter(|b| key(b) == key(r))
            .find_map(|b| b.metrics.map(|m| (b.world, m.tokens_per_s)));
        let m = r.metrics;
        let bound = bound(r.memory_gb, hbm_gb, m.as_ref());
        let (speedup, se) = match (m, base) {
            (Some(m), Some(b)) => {
                let (s, se) = against(b, r.world, m.tokens_per_s);
                (Some(s), Some(se))
            }
            _ => (None, None),
        };
        let r = &mut rows[i];
        r.bound = bound;
        r.speedup = speedup;
        r.scaling_eff = se;
        r.parallel_eff = m.map(|m| match compute_efficiency {
            Some(e) => m.mfu / e,
            None => m.compute_s / m.step_time_s,
        });
        r.comm_compute_ratio = m.as_ref().and_then(comm_compute_ratio);
    }
}

/// Where communication time reaches computation time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "range", rename_all = "lowercase")]
pub enum Critical {
    /// Interpolated between the two projected worlds around the first crossing.
    Within { world: f64, between: [usize; 2] },
    /// Communication already at least as long as compute at the smallest world, `world`.
    Below { world: usize },
    /// Communication shorter than compute up to the largest world, `world`.
    Beyond { world: usize },
}

/// The critical scale of `(world, comm/compute ratio)` points in world order; `None` without
/// points. The ratio is taken as linear in ln N between the last world below 1 and the first
/// at or above it.
pub fn critical_scale(points: &[(usize, f64)]) -> Option<Critical> {
    let first = points.iter().position(|p| p.1 >= 1.0);
    let (&(n0, r0), &(nl, _)) = (points.first()?, points.last()?);
    Some(match first {
        None => Critical::Beyond { world: nl },
        Some(0) if r0 == 1.0 => Critical::Within {
            world: n0 as f64,
            between: [n0, n0],
        },
        Some(0) => Critical::Below { world: n0 },
        Some(i) => {
            let ((na, ra), (nb, rb)) = (points[i - 1], points[i]);
            let (xa, xb) = ((na as f64).ln(), (nb as f64).ln());
            let x = xa + (xb - xa) * (1.0 - ra) / (rb - ra);
            Critical::Within {
                world: x.exp(),
                between: [na, nb],
            }
        }
    })
}

/// What one layout's rows say together (projection.json `layouts[]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayoutScaling {
    pub tp: usize,
    pub pp: usize,
    /// Expert-parallel degree (1 for dense models).
    pub ep: usize,
    /// N₀: the smallest world where the layout was projected; `None` if it never fits.
    pub baseline_world: Option<usize>,
    pub critical: Option<Critical>,
    /// `T(N) = a + b·N + c·ln N` over the projected worlds; `None` with fewer than four.
    pub step_fit: Option<StepFit>,
}

/// One summary per layout, in the order layouts first appear, and the notes that say them.
pub fn layouts(rows: &[Row]) -> (Vec<LayoutScaling>, Vec<String>) {
    let mut keys: Vec<Key> = Vec::new();
    for r in rows {
        if !keys.contains(&key(r)) {
            keys.push(key(r));
        }
    }
    let mut notes = Vec::new();
    let summaries = keys
        .into_iter()
        .map(|k| {
            let (s, fit) = layout(rows, k);
            let name = layout_name(k.0, k.1, k.2);
            notes.extend(s.critical.map(|c| critical_note(&name, &c)));
            notes.push(fit_note(&name, &fit));
            s
        })
        .collect();
    (summaries, notes)
}

/// The summary of layout (tp, pp, ep) and its fit or why there is none.
fn layout(rows: &[Row], k: Key) -> (LayoutScaling, Result<StepFit, String>) {
    let (tp, pp, ep) = k;
    let projected: Vec<(usize, Metrics)> = rows
        .iter()
        .filter(|r| key(r) == k)
        .filter_map(|r| r.metrics.map(|m| (r.world, m)))
        .collect();
    let ratios: Vec<(usize, f64)> = projected
        .iter()
        .filter_map(|(w, m)| comm_compute_ratio(m).map(|r| (*w, r)))
        .collect();
    let times: Vec<(usize, f64)> = projected.iter().map(|(w, m)| (*w, m.step_time_s)).collect();
    let fit = step_fit(&times);
    let s = LayoutScaling {
        tp,
        pp,
        ep,
        baseline_world: projected.first().map(|p| p.0),
        critical: critical_scale(&ratios),
        step_fit: fit.as_ref().ok().copied(),
    };
    (s, fit)
}

fn critical_note(name: &str, c: &Critical) -> String {
    let what = match c {
        Critical::Within { world, between } => format!(
            "communication reaches compute time at about {world:.0} GPUs (N_crit, interpolated \
             in log N between {} and {})",
            between[0], between[1]
        ),
        Critical::Below { world } => format!(
            "communication already lasts as long as compute at {world} GPUs (N_crit below the \
             range)"
        ),
        Critical::Beyond { world } => format!(
            "communication stays shorter than compute up to {world} GPUs (N_crit beyond the \
             range)"
        ),
    };
    format!("{name}: {what}")
}

fn fit_note(name: &str, fit: &Result<StepFit, String>) -> String {
    match fit {
        Ok(f) => format!(
            "{name}: T(N) = {:.4} s {} s·N {} s·ln N over {} world sizes; fitted \
             without {}, it predicts {:.3} s there against {:.3} s projected ({:+.1}%)",
            f.a_s,
            signed(format!("{:.3e}", f.b_s_per_gpu)),
            signed(format!("{:.4}", f.c_s)),
            f.worlds,
            f.held_out_world,
            f.held_out_predicted_s,
            f.held_out_projected_s,
            100.0 * f.held_out_rel_error
        ),
        Err(why) => format!("{name}: no T(N) = a + b·N + c·ln N fit: {why}"),
    }
}

/// `+ x` or `− x` of a formatted number.
fn signed(x: String) -> String {
    match x.strip_prefix('-') {
        Some(abs) => format!("− {abs}"),
        None => format!("+ {x}"),
    }
}

#[cfg(test)]
#[path = "scaling_tests.rs"]
mod tests;
