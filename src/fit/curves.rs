//! Grouping the points of results folders into curves: the per-iteration samples of every
//! measured point, keyed by what a fit keys on (backend, op, algo, dtype, world, nodes,
//! placement, protocol).

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::report::run_reader::{MeasuredPoint, Run};
use crate::report::summary_csv::SUMMARY_FILE;

use super::schema::CurveKey;

/// The samples of one curve, from every run that measured it: size in bytes → times (µs).
pub type Curve = BTreeMap<usize, Vec<f64>>;

/// What the runs hold, grouped into curves, plus notes on points left out.
#[derive(Debug, Default)]
pub struct Curves {
    pub curves: BTreeMap<CurveKey, Curve>,
    pub notes: Vec<String>,
}

/// Groups the usable points of `runs` into curves. Points with wrong results or without samples
/// are left out, each with a note: a fit must not learn from a broken measurement. A run
/// imported from a log that holds one average per size gives that average as the size's one
/// observation: no samples are invented, and each size weighs as one.
pub fn group_curves(runs: &[Run]) -> Curves {
    let mut out = Curves::default();
    for run in runs {
        let averages_only = run
            .meta
            .import
            .as_ref()
            .is_some_and(|i| !i.per_iteration_samples);
        if averages_only && !run.points.is_empty() {
            out.notes.push(format!(
                "{}: imported from a log that prints one average per size, no per-iteration \
                 samples: each size is fitted as one observation (its average)",
                run.dir.display()
            ));
        }
        for p in &run.points {
            let k = &p.record.key;
            let what = || {
                format!(
                    "{}: {} {} {} world {} {} B",
                    run.dir.display(),
                    k.op,
                    super::schema::algo_label(k.algo, k.proto),
                    k.dtype,
                    k.world,
                    k.bytes
                )
            };
            if p.record.wrong > 0 {
                out.notes.push(format!(
                    "{}: left out, {} wrong elements",
                    what(),
                    p.record.wrong
                ));
                continue;
            }
            let average = [p.record.time_us_mean];
            let observed: &[f64] = match (p.samples.is_empty(), averages_only) {
                (false, _) => &p.samples,
                (true, true) => &average,
                (true, false) => {
                    out.notes
                        .push(format!("{}: left out, no samples in samples.csv", what()));
                    continue;
                }
            };
            out.curves
                .entry(curve_key(p))
                .or_default()
                .entry(k.bytes)
                .or_default()
                .extend_from_slice(observed);
        }
    }
    out
}

/// Refuses runs whose summary.csv holds no point at all (a sweep that stopped before its first
/// point), naming the folder.
pub fn require_points(runs: &[Run]) -> Result<()> {
    match runs.iter().find(|r| r.points.is_empty()) {
        Some(r) => Err(Error::Input {
            path: r.dir.join(SUMMARY_FILE),
            msg: "no measured points; nothing to fit".into(),
        }),
        None => Ok(()),
    }
}

/// The curve `point` belongs to.
fn curve_key(point: &MeasuredPoint) -> CurveKey {
    let k = &point.record.key;
    CurveKey {
        backend: k.backend.clone(),
        op: k.op,
        algo: k.algo,
        dtype: k.dtype,
        world: k.world,
        nodes: k.nodes.max(1),
        in_place: k.in_place,
        proto: k.proto,
        comm: k.comm,
    }
}
