//! Reading a results folder back: meta.json, summary.csv and samples.csv cross-checked, and
//! telemetry.csv's rows when there is one. Fit, accept, compare, plot and the HTML report all
//! read folders through [`read_run`].
//!
//! Strict on purpose: a fit, verdict or figure built on a half-read or foreign file would be a
//! confident wrong number. Every refusal names the file (and line, for CSV) and exits 2.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::meta::{Meta, RunStatus, META_FILE};
use crate::model::record::{IterSample, PointRecord};
use crate::report::samples_csv::{read_samples_until_cut, Sample, SAMPLES_FILE};
use crate::report::summary_csv::{read_summary_until_cut, SUMMARY_FILE};
use crate::report::telemetry_csv::{read_telemetry, TelemetryRow, TELEMETRY_FILE};

/// One results folder, read and checked.
#[derive(Debug)]
pub struct Run {
    pub dir: PathBuf,
    pub meta: Meta,
    pub points: Vec<MeasuredPoint>,
    /// telemetry.csv's rows in file order, empty without the file. Read with the rest so that
    /// every command refuses a malformed file alike, not only the fit that uses the power.
    pub telemetry: Vec<TelemetryRow>,
}

/// A point of a run with its per-iteration samples (samples.csv's rows, in iteration order).
#[derive(Debug)]
pub struct MeasuredPoint {
    pub record: PointRecord,
    pub samples: Vec<IterSample>,
}

impl MeasuredPoint {
    /// A point whose iterations took `times` (µs), rank 0 the slowest and alone: what fits and
    /// tests that make points of their own need.
    pub fn with_times(record: PointRecord, times: &[f64]) -> MeasuredPoint {
        let samples = times
            .iter()
            .map(|&t| IterSample {
                time_us: t,
                slowest_rank: 0,
                fastest_us: t,
            })
            .collect();
        MeasuredPoint { record, samples }
    }

    /// The iterations' times (µs).
    pub fn times(&self) -> Vec<f64> {
        self.samples.iter().map(|s| s.time_us).collect()
    }
}

/// Reads `dir`: meta.json, summary.csv and samples.csv, cross-checked, then telemetry.csv.
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
        crate::say!(
            "collbench: warning: {}: meta.json still says `running`: the run was killed (or is \
             still going); reading the points written so far",
            dir.display()
        );
    }
    check_schemas(dir, &meta)?;
    let (mut records, summary_cut) = read_summary_until_cut(&dir.join(SUMMARY_FILE))?;
    let samples_path = dir.join(SAMPLES_FILE);
    refuse_packed_samples(&samples_path)?;
    let (samples, cut) = read_samples_until_cut(&samples_path)?;
    let summarised = records.len();
    if let Some(cut) = cut {
        keep_complete_points(&mut records, &samples, cut, &samples_path);
    }
    // Rows of a point without a summary row (a crash) or dropped as cut off are ignored.
    let after_crash = meta.status != RunStatus::Complete || cut.is_some() || summary_cut;
    let ignored = |point: usize| point < summarised || after_crash;
    let mut per_point = samples_per_point(&samples, records.len(), ignored, &samples_path)?;
    let expected = |r: &PointRecord| match meta.import {
        // An imported log has what its tool printed: most print no samples at all.
        Some(_) => 0,
        None => r.iters,
    };
    keep_points_with_their_samples(&mut records, &mut per_point, expected, &samples_path);
    let points = records
        .into_iter()
        .zip(per_point)
        .map(|(record, samples)| MeasuredPoint { record, samples })
        .collect();
    Ok(Run {
        dir: dir.to_path_buf(),
        meta,
        points,
        telemetry: read_telemetry_if_any(dir)?,
    })
}

/// A missing samples.csv kept compressed beside (as committed reference runs keep large ones):
/// one line saying how to unpack it, rather than "no such file".
fn refuse_packed_samples(path: &Path) -> Result<()> {
    if path.exists() {
        return Ok(());
    }
    for (ext, tool) in [("xz", "xz"), ("gz", "gzip"), ("zst", "zstd")] {
        let packed = path.with_extension(format!("csv.{ext}"));
        if packed.is_file() {
            return Err(Error::Input {
                path: path.to_path_buf(),
                msg: format!(
                    "missing, but {} is beside it: unpack it first ({tool} -dk {})",
                    packed.display(),
                    packed.display()
                ),
            });
        }
    }
    Ok(())
}

/// The schema each file of a folder must have, as meta.json's `files` names them.
const SCHEMAS: [(&str, &str); 5] = [
    (SUMMARY_FILE, crate::report::summary_csv::SUMMARY_SCHEMA),
    (SAMPLES_FILE, crate::report::samples_csv::SAMPLES_SCHEMA),
    (
        TELEMETRY_FILE,
        crate::report::telemetry_csv::TELEMETRY_SCHEMA,
    ),
    ("ranks.csv", crate::report::ranks_csv::RANKS_SCHEMA),
    ("pairs.csv", crate::report::pairs_csv::PAIRS_SCHEMA),
];

/// Refuses a folder whose meta.json says a file has a schema this collbench does not read (a
/// later version's file read as this one's would be a confident wrong number).
fn check_schemas(dir: &Path, meta: &Meta) -> Result<()> {
    for (file, want) in SCHEMAS {
        match meta.files.get(file) {
            Some(got) if got != want => {
                return Err(Error::Input {
                    path: dir.join(META_FILE),
                    msg: format!(
                        "{file} is {got}, but this collbench reads {want}; read it with the \
                         collbench that wrote it, or a newer one"
                    ),
                })
            }
            _ => {}
        }
    }
    Ok(())
}

/// The times of each of the `points` kept, from samples.csv's rows; a row of a later point is
/// skipped when `ignored` says so and refused otherwise, as is a time that is not positive.
fn samples_per_point(
    samples: &[Sample],
    points: usize,
    ignored: impl Fn(usize) -> bool,
    path: &Path,
) -> Result<Vec<Vec<IterSample>>> {
    let mut per_point: Vec<Vec<IterSample>> = vec![Vec::new(); points];
    for (i, (point, s)) in samples.iter().enumerate() {
        // Line 1 is the header; every later line is one sample.
        let line = i + 2;
        let bad = |msg: String| Error::Input {
            path: path.to_path_buf(),
            msg: format!("line {line}: {msg}"),
        };
        if *point >= points && ignored(*point) {
            continue;
        }
        if *point >= points {
            return Err(bad(format!(
                "point {point} is not a row of {SUMMARY_FILE} ({points} points)"
            )));
        }
        if !(s.time_us.is_finite() && s.time_us > 0.0) {
            return Err(bad(format!("time_us {} is not a positive time", s.time_us)));
        }
        per_point[*point].push(*s);
    }
    Ok(per_point)
}

/// After samples.csv was cut off in the rows of `cut` (a point, or unknown), drops that point
/// and those after it from `records`: their samples may be short.
fn keep_complete_points(
    records: &mut Vec<PointRecord>,
    samples: &[Sample],
    cut: Option<usize>,
    path: &Path,
) {
    let last_seen = samples.iter().map(|(p, _)| *p).max();
    let Some(first_short) = cut.or(last_seen) else {
        records.clear();
        return;
    };
    if first_short < records.len() {
        crate::say!(
            "collbench: warning: {}: the samples of point {first_short} were cut off; reading \
             the {first_short} points before it",
            path.display()
        );
        records.truncate(first_short);
    }
}

/// Drops the first point with fewer samples than `expected` says it took, and every point after
/// it: samples.csv ended early at a line boundary (a crash or a full disk between two rows),
/// which its own reading cannot tell. Their numbers would be read from a part of their samples.
fn keep_points_with_their_samples(
    records: &mut Vec<PointRecord>,
    per_point: &mut Vec<Vec<IterSample>>,
    expected: impl Fn(&PointRecord) -> usize,
    path: &Path,
) {
    let Some(short) = records
        .iter()
        .zip(per_point.iter())
        .position(|(r, s)| s.len() < expected(r))
    else {
        return;
    };
    crate::say!(
        "collbench: warning: {}: point {short} has {} of its {} samples (the file ends early); \
         reading the {short} points before it",
        path.display(),
        per_point[short].len(),
        expected(&records[short])
    );
    records.truncate(short);
    per_point.truncate(short);
}

/// telemetry.csv's rows; none when the run has no such file (every backend but NCCL).
fn read_telemetry_if_any(dir: &Path) -> Result<Vec<TelemetryRow>> {
    let path = dir.join(TELEMETRY_FILE);
    if !path.exists() {
        return Ok(Vec::new());
    }
    read_telemetry(&path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Op;
    use crate::model::record::IterSample;
    use crate::report::telemetry_csv::TELEMETRY_COLUMNS;

    fn records(n: usize) -> Vec<PointRecord> {
        (0..n)
            .map(|i| PointRecord::example(Op::AllReduce, 1024 << i, 2))
            .collect()
    }

    fn samples(points: &[usize]) -> Vec<Sample> {
        let s = IterSample {
            time_us: 1.0,
            slowest_rank: 0,
            fastest_us: 1.0,
        };
        points.iter().map(|&p| (p, s)).collect()
    }

    #[test]
    fn a_cut_in_a_known_point_keeps_the_points_before_it() {
        let mut r = records(3);
        keep_complete_points(&mut r, &samples(&[0, 1]), Some(1), Path::new("s"));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn a_cut_in_an_unknown_point_drops_the_last_point_seen() {
        // The cut line may hold the last point's final sample: it may be short.
        let mut r = records(3);
        keep_complete_points(&mut r, &samples(&[0, 1, 1]), None, Path::new("s"));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn a_cut_before_any_whole_row_keeps_nothing() {
        let mut r = records(2);
        keep_complete_points(&mut r, &[], None, Path::new("s"));
        assert!(r.is_empty());
    }

    #[test]
    fn a_cut_past_the_summary_keeps_every_point() {
        let mut r = records(2);
        keep_complete_points(&mut r, &samples(&[0, 1, 2]), Some(2), Path::new("s"));
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn samples_of_unknown_points_are_skipped_or_refused_with_the_line() {
        let per = samples_per_point(&samples(&[0, 1, 2]), 2, |_| true, Path::new("s")).unwrap();
        let times: Vec<Vec<f64>> = per
            .iter()
            .map(|p| p.iter().map(|s| s.time_us).collect())
            .collect();
        assert_eq!(times, vec![vec![1.0], vec![1.0]]);
        let e = samples_per_point(&samples(&[0, 2]), 2, |_| false, Path::new("s"));
        let e = e.unwrap_err().to_string();
        assert!(e.contains("line 3: point 2 is not a row"), "{e}");
    }

    #[test]
    fn a_file_that_is_no_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("summary.csv");
        std::fs::write(&file, "").unwrap();
        let e = read_run(&file).unwrap_err().to_string();
        assert!(e.contains("not a results folder"), "{e}");
    }

    #[test]
    fn a_run_without_telemetry_has_no_rows() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_telemetry_if_any(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_bad_telemetry_value_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let fields: Vec<&str> = TELEMETRY_COLUMNS
            .iter()
            .map(|c| match *c {
                "point" | "rank" | "samples" => "1",
                "power_w_mean" => "lots",
                _ => "",
            })
            .collect();
        let text = format!("{}\n{}\n", TELEMETRY_COLUMNS.join(","), fields.join(","));
        std::fs::write(dir.path().join(TELEMETRY_FILE), text).unwrap();
        let e = read_telemetry_if_any(dir.path()).unwrap_err().to_string();
        assert!(e.contains("telemetry.csv") && e.contains("line 2"), "{e}");
    }
}
