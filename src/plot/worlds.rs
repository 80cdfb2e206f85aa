//! Figures against world size at chosen message sizes: bus bandwidth and latency, one line per
//! algorithm (and dtype, placement, ...) and size, with the fit's cross-world model dashed over
//! them when a fit.json is given.

use std::collections::{BTreeMap, BTreeSet};

use super::figure::{fit_legend, Axis, Figure, Legend, Scale, Series, Style, TickFormat};
use super::fitlines::world_model;
use super::measured::{busbw_axis, latency_axis, Labeler, LineKey, OpLines};
use crate::collective::Op;
use crate::fit::schema::FitFile;
use crate::model::record::PointRecord;
use crate::units::format_size;

/// A line of these figures: a line key without its world, at one size.
struct Family<'a> {
    key: LineKey,
    bytes: usize,
    /// (world, point) ascending in world.
    points: Vec<(usize, &'a PointRecord)>,
}

/// The sizes to draw: those asked for, or the smallest, a middle and the largest measured.
pub fn chosen_sizes(lines: &OpLines<'_>, requested: Option<&[usize]>) -> Vec<usize> {
    if let Some(r) = requested {
        return r.to_vec();
    }
    let sizes: BTreeSet<usize> = lines.values().flatten().map(|r| r.key.bytes).collect();
    let (Some(&lo), Some(&hi)) = (sizes.first(), sizes.last()) else {
        return Vec::new();
    };
    let mid = ((lo as f64) * (hi as f64)).sqrt();
    let near = sizes
        .iter()
        .copied()
        .min_by(|a, b| log_gap(*a, mid).total_cmp(&log_gap(*b, mid)))
        .unwrap_or(lo);
    let mut out: Vec<usize> = [lo, near, hi].into_iter().map(round_size).collect();
    out.dedup();
    out
}

/// The power of two within 25% of a measured size (a size that ops splitting the buffer
/// rounded to whole elements per rank), else the size itself.
fn round_size(bytes: usize) -> usize {
    let p = (bytes as f64).log2().round().exp2() as usize;
    if log_gap(p, bytes as f64) <= 1.25f64.ln() {
        p
    } else {
        bytes
    }
}

fn log_gap(a: usize, b: f64) -> f64 {
    ((a as f64) / b).ln().abs()
}

/// The measured point of a line nearest `bytes`, if within 25% (sizes a nccl-tests series
/// rounds to whole elements per rank differ by less; neighbours differ by the step factor).
fn nearest<'a>(pts: &[&'a PointRecord], bytes: usize) -> Option<&'a PointRecord> {
    pts.iter()
        .copied()
        .min_by(|a, b| {
            log_gap(a.key.bytes, bytes as f64).total_cmp(&log_gap(b.key.bytes, bytes as f64))
        })
        .filter(|r| log_gap(r.key.bytes, bytes as f64) <= 1.25f64.ln())
}

/// Lines grouped across worlds at each size; families with fewer than two worlds are dropped.
fn families<'a>(lines: &OpLines<'a>, sizes: &[usize]) -> Vec<Family<'a>> {
    let mut groups: BTreeMap<LineKey, Vec<(usize, &Vec<&'a PointRecord>)>> = BTreeMap::new();
    for (k, pts) in lines {
        let family = LineKey {
            world: 0,
            ..k.clone()
        };
        groups.entry(family).or_default().push((k.world, pts));
    }
    let mut out = Vec::new();
    for (key, worlds) in groups {
        for &bytes in sizes {
            let points: Vec<(usize, &PointRecord)> = worlds
                .iter()
                .filter_map(|(w, pts)| Some((*w, nearest(pts, bytes)?)))
                .collect();
            if points.len() >= 2 {
                out.push(Family {
                    key: key.clone(),
                    bytes,
                    points,
                });
            }
        }
    }
    out
}

/// Whether an op was measured at two or more world sizes.
pub fn has_worlds(lines: &OpLines<'_>) -> bool {
    lines.keys().map(|k| k.world).collect::<BTreeSet<_>>().len() >= 2
}

fn world_axis() -> Axis {
    Axis::new("world size p (ranks)", Scale::Linear, TickFormat::Count)
}

fn label(f: &Family<'_>, labeler: &Labeler) -> String {
    let mut parts = vec![labeler.algo(&f.key), format_size(f.bytes)];
    parts.extend(labeler.extras(&f.key));
    parts.join(", ")
}

/// busbw and latency against world size for one op, at `sizes`.
pub fn vs_world(
    op: Op,
    lines: &OpLines<'_>,
    labeler: &Labeler,
    sizes: &[usize],
    fit: Option<&FitFile>,
) -> Vec<Figure> {
    let fams = families(lines, sizes);
    if fams.is_empty() {
        return Vec::new();
    }
    let mut busbw = Vec::new();
    let mut latency = Vec::new();
    for (i, f) in fams.iter().enumerate() {
        let lab = label(f, labeler);
        let pts =
            |y: fn(&PointRecord) -> f64| f.points.iter().map(|(w, r)| (*w as f64, y(r))).collect();
        busbw.push(measured(lab.clone(), i, pts(|r| r.busbw_gbps)));
        latency.push(measured(lab, i, pts(|r| r.time_us_typical())));
        let worlds = (f.points[0].0, f.points[f.points.len() - 1].0);
        if let Some(model) = fit.and_then(|fit| world_model(fit, op, &f.key, f.bytes, worlds)) {
            busbw.push(model_series(i, model.iter().map(|m| (m.0, m.2)).collect()));
            latency.push(model_series(i, model.iter().map(|m| (m.0, m.1)).collect()));
        }
    }
    let fitted = busbw.iter().any(|s| s.style == Style::Model);
    let drawn: BTreeSet<usize> = fams.iter().map(|f| f.bytes).collect();
    let sizes_text: Vec<String> = drawn.iter().map(|s| format_size(*s)).collect();
    let note = if fitted {
        "dashed: the fit's cross-world model (fit.json); sizes: ".to_string()
    } else {
        "measured at sizes: ".to_string()
    } + &sizes_text.join(", ");
    let mut figs = vec![
        Figure {
            name: format!("busbw-vs-world-{op}"),
            title: format!("{} bus bandwidth by world size", op.title()),
            x: world_axis(),
            y: busbw_axis(),
            series: busbw,
            legend: Legend::UpperRight,
            note: Some(note.clone()),
            y_from_zero: true,
        },
        Figure {
            name: format!("latency-vs-world-{op}"),
            title: format!("{} time per call by world size", op.title()),
            x: world_axis(),
            y: latency_axis(),
            series: latency,
            legend: Legend::UpperLeft,
            note: Some(note),
            y_from_zero: false,
        },
    ];
    if fitted {
        for f in &mut figs {
            f.series.push(fit_legend("cross-world model"));
        }
    }
    figs
}

fn measured(label: String, color: usize, points: Vec<(f64, f64)>) -> Series {
    Series {
        label,
        color,
        style: Style::Measured,
        points,
    }
}

fn model_series(color: usize, points: Vec<(f64, f64)>) -> Series {
    Series {
        label: String::new(),
        color,
        style: Style::Model,
        points,
    }
}
