//! What a fit.json adds to the figures: the fitted alpha-beta line of each measured curve
//! (per regime) over the latency points, and the cross-world model over the world-size
//! figures.

use super::figure::{fit_legend, Figure, Series, Style};
use super::measured::{LineKey, OpLines};
use crate::collective::{algbw_gbps, busbw_gbps, Op};
use crate::fit::predict::{predict, Query};
use crate::fit::schema::{FitFile, Line};

/// Points per regime of a drawn line (evenly spaced in log size).
const SAMPLES: usize = 32;

/// `T(S) = alpha + beta·S` in µs, sampled over the regime's sizes.
pub fn line_points(line: &Line) -> Vec<(f64, f64)> {
    let lo = (line.min_bytes.max(1)) as f64;
    let hi = (line.max_bytes.max(1)) as f64;
    (0..SAMPLES)
        .map(|i| {
            let s = lo * (hi / lo).powf(i as f64 / (SAMPLES - 1) as f64);
            (s, line.time_us(s))
        })
        .collect()
}

/// Adds each line's fitted regimes to a latency-by-size figure (same colour, dashed), and a
/// legend entry for them; says in `notes` which lines the fit does not cover.
pub fn overlay_sizes(
    fig: &mut Figure,
    op: Op,
    lines: &OpLines<'_>,
    fit: &FitFile,
    notes: &mut Vec<String>,
) {
    let mut added = false;
    for (i, k) in lines.keys().enumerate() {
        let key = k.curve_key(op);
        let Some(curve) = fit.curves.iter().find(|c| c.key == key) else {
            notes.push(format!(
                "fit has no curve for {op} {} {} world {}{}; drawn without a fitted line",
                key.algo_label(),
                k.dtype,
                k.world,
                if k.in_place { " in place" } else { "" }
            ));
            continue;
        };
        for seg in &curve.segments {
            fig.series.push(Series {
                label: String::new(),
                color: i,
                style: Style::Model,
                points: line_points(seg),
            });
            added = true;
        }
    }
    if added {
        fig.series.push(fit_legend("alpha-beta fit"));
        fig.note =
            Some("points: medians; dashed: fitted T = alpha + beta·S per regime (fit.json)".into());
    }
}

/// The cross-world model of `key`'s op, algorithm and dtype at `bytes`, at every world from
/// `worlds.0` to `worlds.1`: (world, time µs, busbw GB/s). None when the fit has no model.
pub fn world_model(
    fit: &FitFile,
    op: Op,
    key: &LineKey,
    bytes: usize,
    worlds: (usize, usize),
) -> Option<Vec<(f64, f64, f64)>> {
    let mut out = Vec::new();
    for world in worlds.0..=worlds.1 {
        let q = Query {
            op,
            algo: key.algo,
            proto: key.proto,
            dtype: Some(key.dtype),
            world,
            nodes: key.nodes.max(1),
            bytes,
            comm: key.comm,
            algo_given: true,
        };
        let p = predict(fit, &q).ok()?;
        let algbw = algbw_gbps(op, bytes, world, p.time_us);
        out.push((world as f64, p.time_us, busbw_gbps(op, world, algbw)));
    }
    Some(out)
}
