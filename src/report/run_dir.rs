//! A results folder: meta.json plus summary.csv, samples.csv and ranks.csv, appended to as each
//! point finishes so that nothing measured is lost when a run dies.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::pairs_csv::{PairRow, PairsWriter, PAIRS_FILE, PAIRS_SCHEMA};
use super::ranks_csv::RanksWriter;
use super::samples_csv::SamplesWriter;
use super::sink::{FinishedPoint, PointSink};
use super::summary_csv::{SummaryWriter, SUMMARY_FILE};
use super::telemetry_csv::{TelemetryRow, TelemetryWriter, TELEMETRY_FILE, TELEMETRY_SCHEMA};
use crate::collective::Op;
use crate::error::{Error, Result};
use crate::meta::{Meta, RunStatus, META_FILE, META_SCHEMA};
use crate::model::record::{IterSample, PointRecord, RankSummary};

/// An open results folder being written by a run.
#[derive(Debug)]
pub struct RunDir {
    /// The folder.
    pub path: PathBuf,
    meta: Meta,
    /// The per-point files, in the order each point is appended to them: summary.csv last,
    /// so a summary row always has the other files' rows on disk.
    sinks: Vec<Box<dyn PointSink>>,
    pairs: Option<PairsWriter>,
    telemetry: Option<TelemetryWriter>,
    points: usize,
}

impl RunDir {
    /// Creates the folder (and its parents), opens the per-point CSV files, and writes
    /// meta.json with `files` listing the schema of every file. Refuses a folder that already
    /// holds a summary.csv (created first, exclusively), so an earlier run's results are never
    /// mixed with or overwritten by this one.
    pub fn create(path: &Path, meta: &Meta) -> Result<RunDir> {
        prepare(path)?;
        let opened = |e| open_error(path, e);
        let summary = SummaryWriter::create(path).map_err(opened)?;
        let samples = SamplesWriter::create(path).map_err(opened)?;
        let ranks = RanksWriter::create(path).map_err(opened)?;
        let sinks: Vec<Box<dyn PointSink>> =
            vec![Box::new(samples), Box::new(ranks), Box::new(summary)];
        let mut meta = meta.clone();
        meta.files = file_schemas(&sinks);
        meta.write(path).map_err(opened)?;
        Ok(RunDir {
            path: path.to_path_buf(),
            meta,
            sinks,
            pairs: None,
            telemetry: None,
            points: 0,
        })
    }

    /// Adds pairs.csv (a `--pairs` run) and lists it in meta.json.
    pub fn add_pairs(&mut self) -> Result<()> {
        self.pairs = Some(PairsWriter::create(&self.path)?);
        let files = &mut self.meta.files;
        files.insert(PAIRS_FILE.into(), PAIRS_SCHEMA.into());
        self.meta.write(&self.path)
    }

    /// Adds telemetry.csv (an NCCL run) and lists it in meta.json.
    pub fn add_telemetry(&mut self) -> Result<()> {
        self.telemetry = Some(TelemetryWriter::create(&self.path)?);
        let files = &mut self.meta.files;
        files.insert(TELEMETRY_FILE.into(), TELEMETRY_SCHEMA.into());
        self.meta.write(&self.path)
    }

    /// Appends the telemetry rows of the point about to be appended, in one write; call it just
    /// before [`append_point`](Self::append_point), so that a summary row always has its
    /// telemetry on disk. Each row's `point` is set here.
    pub fn append_telemetry(&mut self, rows: &[TelemetryRow]) -> Result<()> {
        let point = self.points;
        let writer = self
            .telemetry
            .as_mut()
            .ok_or_else(|| Error::usage("telemetry.csv was not created for this run"))?;
        writer.append(point, rows)
    }

    /// [`append_point`](Self::append_point) for a point of a `--pairs` run: its pair row first
    /// (`pair.point` is set here), so a summary row always has its pair on disk.
    pub fn append_pair_point(
        &mut self,
        rec: &PointRecord,
        samples: &[IterSample],
        ranks: &[RankSummary],
        pair: &PairRow,
    ) -> Result<()> {
        let point = self.points;
        let writer = self
            .pairs
            .as_mut()
            .ok_or_else(|| Error::usage("pairs.csv was not created for this run"))?;
        writer.append(&PairRow {
            point,
            ..pair.clone()
        })?;
        self.append_point(rec, samples, ranks)
    }

    /// Appends one finished point to every per-point file, summary.csv last, so a summary row
    /// always has its samples and rank rows on disk; the point's index is the number of points
    /// appended before it.
    pub fn append_point(
        &mut self,
        rec: &PointRecord,
        samples: &[IterSample],
        ranks: &[RankSummary],
    ) -> Result<()> {
        let point = FinishedPoint {
            index: self.points,
            record: rec,
            samples,
            ranks,
        };
        for sink in &mut self.sinks {
            sink.append(&point)?;
        }
        self.points += 1;
        Ok(())
    }

    /// Points appended so far.
    pub fn points(&self) -> usize {
        self.points
    }

    /// The metadata as written to meta.json (with `files` filled in).
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Sets meta.json's `bisect`, written with the rest when the run ends.
    pub fn set_bisect(&mut self, bisect: crate::meta::BisectSummary) {
        self.meta.bisect = Some(bisect);
    }

    /// Records how the run ended and rewrites meta.json with the end time and point count.
    pub fn finish(&mut self, status: RunStatus, error: Option<String>) -> Result<()> {
        self.meta.points = self.points;
        self.meta.finish(status, error);
        self.meta.write(&self.path)
    }
}

/// meta.json and every per-point file with its schema id (meta.json's `files`).
fn file_schemas(sinks: &[Box<dyn PointSink>]) -> std::collections::BTreeMap<String, String> {
    let files = sinks.iter().map(|s| s.file());
    std::iter::once((META_FILE, META_SCHEMA))
        .chain(files)
        .map(|(f, s)| (f.to_string(), s.to_string()))
        .collect()
}

/// Makes sure `path` is a folder without earlier results.
fn prepare(path: &Path) -> Result<()> {
    check_target(path)?;
    std::fs::create_dir_all(path).map_err(|e| unwritable(path, &e))
}

/// Refuses a results folder that is a file, or that already holds a run.
pub fn check_target(path: &Path) -> Result<()> {
    if path.exists() && !path.is_dir() {
        let shown = path.display();
        return Err(Error::usage(format!(
            "cannot write results to {shown}: it is not a folder; choose another --out"
        )));
    }
    if path.join(SUMMARY_FILE).exists() {
        return Err(already_used(path));
    }
    Ok(())
}

/// The one-line error for a results folder that already holds a run.
fn already_used(path: &Path) -> Error {
    Error::usage(format!(
        "{} already holds results ({SUMMARY_FILE}); choose another --out or remove it",
        path.display()
    ))
}

/// The one-line error for a folder that cannot be written.
fn unwritable(path: &Path, e: &io::Error) -> Error {
    Error::usage(format!(
        "cannot write results to {}: {}; choose another --out",
        path.display(),
        reason(e)
    ))
}

/// Turns a failure to create one of the folder's files into the folder-level message.
fn open_error(path: &Path, e: Error) -> Error {
    match e {
        // Another run created summary.csv after prepare() looked.
        Error::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists => {
            already_used(path)
        }
        Error::Io { source, .. } => unwritable(path, &source),
        other => other,
    }
}

/// The OS message without its "(os error N)" suffix, which says nothing to a user.
fn reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// The results folder of a run: `out` when given, else a new folder under `results/` named by
/// [`default_run_id`]. Two runs started in the same second with the same ops each get their
/// own folder: the folder is created here, exclusively, and a taken name gets `-2`, `-3`, ...
/// (so names still sort by start time).
pub fn run_dir_or_default(out: Option<&Path>, ops: &[Op], backend: &str) -> Result<PathBuf> {
    match out {
        Some(dir) => Ok(dir.to_path_buf()),
        None => new_unique_dir(&Path::new("results").join(default_run_id(ops, backend))),
    }
}

/// Creates `base`, or `base-2`, `base-3`, ... when it is taken, and returns the one created.
pub fn new_unique_dir(base: &Path) -> Result<PathBuf> {
    if let Some(parent) = base.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| unwritable(parent, &e))?;
    }
    let mut last = None;
    for n in 1..=1000 {
        let dir = match n {
            1 => base.to_path_buf(),
            _ => PathBuf::from(format!("{}-{n}", base.display())),
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(dir),
            Err(e) => return Err(unwritable(&dir, &e)),
        }
    }
    Err(Error::usage(format!(
        "{} and 999 more folders like it already exist; give --out",
        last.unwrap_or_else(|| base.to_path_buf()).display()
    )))
}

/// A folder name for a run starting now: `YYYYMMDD-HHMMSS-<ops joined by +>-<backend>` in UTC,
/// e.g. `20261122-081500-allreduce+allgather-host`.
pub fn default_run_id(ops: &[Op], backend: &str) -> String {
    run_id_at(SystemTime::now(), ops, backend)
}

/// [`default_run_id`] for a given time.
fn run_id_at(time: SystemTime, ops: &[Op], backend: &str) -> String {
    // "2026-11-22T08:15:00Z": keep the digits of the date and of the time.
    let stamp = humantime::format_rfc3339_seconds(time).to_string();
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
    let (date, clock) = stamp.split_once('T').unwrap_or((&stamp, ""));
    let mut names: Vec<&str> = Vec::new();
    for op in ops {
        if !names.contains(&op.name()) {
            names.push(op.name());
        }
    }
    let mut id = format!("{}-{}", digits(date), digits(clock));
    if !names.is_empty() {
        id = format!("{id}-{}", names.join("+"));
    }
    format!("{id}-{backend}")
}

#[cfg(test)]
mod tests;
