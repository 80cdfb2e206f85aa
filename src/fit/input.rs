//! Reading results folders into curves: the per-iteration samples of every measured point,
//! grouped by what a fit keys on (backend, op, algo, dtype, world, nodes, placement, protocol).
//!
//! Strict on purpose: a fit built on a half-read or foreign file would be a confident wrong
//! number. Every refusal names the file (and line, for CSV) and exits 2.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::meta::{Meta, RunStatus, META_FILE};
use crate::model::record::{IterSample, PointRecord};
use crate::report::samples_csv::{read_samples_until_cut, SAMPLES_FILE};
use crate::report::summary_csv::{read_summary, SUMMARY_FILE};

use super::power::read_source_power;
use super::schema::{CurveKey, SourcePower};

/// One results folder, read and checked.
#[derive(Debug)]
pub struct Run {
    pub dir: PathBuf,
    pub meta: Meta,
    pub points: Vec<MeasuredPoint>,
    /// NVML-measured GPU power, from the run's telemetry.csv when it has one.
    pub gpu_power: Option<SourcePower>,
}

/// A point of a run with its per-iteration times (µs).
#[derive(Debug)]
pub struct MeasuredPoint {
    pub record: PointRecord,
    pub samples: Vec<f64>,
}

impl MeasuredPoint {
    /// The curve this point belongs to.
    pub fn curve_key(&self) -> CurveKey {
        let k = &self.record.key;
        CurveKey {
            backend: k.backend.clone(),
            op: k.op,
            algo: k.algo,
            dtype: k.dtype,
            world: k.world,
            nodes: k.nodes.max(1),
            in_place: k.in_place,
            proto: k.proto,
        }
    }
}

/// Reads `dir`: meta.json, summary.csv and samples.csv, cross-checked.
pub fn read_run(dir: &Path) -> Result<Run> {
    if !dir.is_dir() {
        return Err(Error::Input {
            path: dir.to_path_buf(),
            msg: "not a results folder (expected a directory holding summary.csv, samples.csv \
                  and meta.json from `collbench sweep`)"
                .into(),
        });
    }
    let meta = Meta::read(&dir.join(META_FILE))?;
    if meta.status == RunStatus::Running {
        eprintln!(
            "collbench: warning: {}: meta.json still says `running`: the run was killed (or is \
             still going); reading the points written so far",
            dir.display()
        );
    }
    let mut records = read_summary(&dir.join(SUMMARY_FILE))?;
    let samples_path = dir.join(SAMPLES_FILE);
    let (samples, cut) = read_samples_until_cut(&samples_path)?;
    let summarised = records.len();
    if let Some(cut) = cut {
        keep_complete_points(&mut records, &samples, cut, &samples_path);
    }
    let mut per_point: Vec<Vec<f64>> = vec![Vec::new(); records.len()];
    for (i, (point, s)) in samples.iter().enumerate() {
        // Line 1 is the header; every later line is one sample.
        let line = i + 2;
        let bad = |msg: String| Error::Input {
            path: samples_path.clone(),
            msg: format!("line {line}: {msg}"),
        };
        // Rows of a point without a summary row (a crash) or dropped as cut off are ignored.
        let after_crash = meta.status != RunStatus::Complete || cut.is_some();
        if *point >= records.len() && (*point < summarised || after_crash) {
            continue;
        }
        if *point >= records.len() {
            return Err(bad(format!(
                "point {point} is not a row of {SUMMARY_FILE} ({} points)",
                records.len()
            )));
        }
        if !(s.time_us.is_finite() && s.time_us > 0.0) {
            return Err(bad(format!("time_us {} is not a positive time", s.time_us)));
        }
        per_point[*point].push(s.time_us);
    }
    let points = records
        .into_iter()
        .zip(per_point)
        .map(|(record, samples)| MeasuredPoint { record, samples })
        .collect();
    Ok(Run {
        dir: dir.to_path_buf(),
        meta,
        points,
        gpu_power: read_source_power(dir)?,
    })
}

/// After samples.csv was cut off in the rows of `cut` (a point, or unknown), drops that point
/// and those after it from `records`: their samples may be short.
fn keep_complete_points(
    records: &mut Vec<PointRecord>,
    samples: &[(usize, IterSample)],
    cut: Option<usize>,
    path: &Path,
) {
    let last_seen = samples.iter().map(|(p, _)| *p).max();
    let Some(first_short) = cut.or(last_seen) else {
        records.clear();
        return;
    };
    if first_short < records.len() {
        eprintln!(
            "collbench: warning: {}: the samples of point {first_short} were cut off; reading \
             the {first_short} points before it",
            path.display()
        );
        records.truncate(first_short);
    }
}

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
                .entry(p.curve_key())
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
