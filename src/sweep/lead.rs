//! The lead's side of a run, written once for every driver (the host launcher, rank 0 of a
//! launcher's world, MPI rank 0, NCCL rank 0): the results folder created with its meta.json,
//! the console opened with the plan's notes, every measured point appended to disk before it is
//! printed, and the close-out that records in meta.json how the run ended.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::meta::{Meta, RunStatus};
use crate::model::plan::Plan;
use crate::model::record::{IterSample, PointKey, PointRecord, RankSummary};
use crate::report::pairs_csv::PairRow;
use crate::report::run_dir::RunDir;
use crate::sweep::console::{Console, View};

/// One row of a planned point: its record, samples and per-rank summaries.
pub type PointRow = (PointRecord, Vec<IterSample>, Vec<RankSummary>);

/// What a finished sweep produced.
pub struct Outcome {
    pub dir: PathBuf,
    pub points: usize,
    /// Points where some element was wrong.
    pub wrong_points: usize,
}

/// The results folder and the console of the rank that writes a run.
pub struct Lead {
    dir: PathBuf,
    pub out: RunDir,
    pub console: Console,
    wrong_points: usize,
    /// The median time of every call alone that a call beside others follows (`--split`,
    /// `--with-compute`), by its key (the latest one).
    alone_us: Vec<(PointKey, f64)>,
    /// Whether the plan runs calls beside others, whose slowdowns the lead works out.
    beside_calls: bool,
}

impl Lead {
    /// Creates the results folder at `dir` with `meta` and opens the console for `plan`.
    pub fn open(dir: PathBuf, meta: &Meta, plan: &Plan, view: &View) -> Result<Lead> {
        let out = RunDir::create(&dir, meta)?;
        Ok(Lead {
            dir,
            out,
            console: open_console(plan, view, meta),
            wrong_points: 0,
            alone_us: Vec::new(),
            beside_calls: (plan.points.iter()).any(|p| p.split.is_some() || p.compute.is_some()),
        })
    }

    /// The results folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends a measured point to the folder, then prints it.
    pub fn point(
        &mut self,
        rec: &PointRecord,
        samples: &[IterSample],
        per_rank: &[RankSummary],
    ) -> Result<()> {
        self.append(rec, samples, per_rank)?;
        self.console.point(rec);
        Ok(())
    }

    /// A point's row on disk, counted (not printed).
    fn append(
        &mut self,
        rec: &PointRecord,
        samples: &[IterSample],
        per_rank: &[RankSummary],
    ) -> Result<()> {
        self.out.append_point(&stamped(rec), samples, per_rank)?;
        self.count(rec);
        Ok(())
    }

    /// Appends a `--pairs` point with its row of pairs.csv, then prints it tagged with the pair.
    pub fn pair_point(
        &mut self,
        rec: &PointRecord,
        samples: &[IterSample],
        per_rank: &[RankSummary],
        row: &PairRow,
    ) -> Result<()> {
        self.out
            .append_pair_point(&stamped(rec), samples, per_rank, row)?;
        let tag = format!("pair {}-{}", row.host_a, row.host_b);
        self.console.point_tagged(rec, &tag);
        self.count(rec);
        Ok(())
    }

    /// Appends the rows of one planned point (its call, or a `--split` point's groups: one
    /// alone, or every group at once), then prints them. A call beside others gets its
    /// slowdown against the same call alone, measured before it; groups at once the sum of
    /// their busbw.
    pub fn point_rows(&mut self, groups: Vec<PointRow>) -> Result<()> {
        let shown = self.append_rows(groups)?;
        self.show_rows(&shown);
        Ok(())
    }

    /// [`Lead::point_rows`]' first half: the rows settled and appended, returned with their
    /// console tags for [`Lead::show_rows`]: for a driver that must record the point elsewhere
    /// before anything is printed (MPI's signal handler, which must never wait on a console).
    pub fn append_rows(
        &mut self,
        groups: Vec<PointRow>,
    ) -> Result<Vec<(PointRecord, Option<String>)>> {
        let together: Vec<&PointRecord> = (groups.iter().map(|g| &g.0))
            .filter(|r| r.key.concurrent.is_some())
            .collect();
        let aggregate = (!together.is_empty()).then(|| together.iter().map(|r| r.busbw_gbps).sum());
        let mut shown = Vec::with_capacity(groups.len());
        for (mut rec, samples, per_rank) in groups {
            let tag = self.settle(&mut rec, aggregate);
            self.append(&rec, &samples, &per_rank)?;
            shown.push((rec, tag));
        }
        Ok(shown)
    }

    /// [`Lead::point_rows`]' second half: the appended rows on the console.
    pub fn show_rows(&self, shown: &[(PointRecord, Option<String>)]) {
        for (i, (rec, tag)) in shown.iter().enumerate() {
            self.console
                .point_row(rec, tag.as_deref(), i + 1 == shown.len());
        }
    }

    /// Sets a call's slowdown and aggregate, or remembers its time alone where calls beside
    /// others follow; its console tag (none for a plain point's row).
    fn settle(&mut self, rec: &mut PointRecord, aggregate: Option<f64>) -> Option<String> {
        let group = format!("group {}", rec.key.group.as_deref().unwrap_or("?"));
        let Some(with) = rec.key.concurrent.clone() else {
            if self.beside_calls {
                self.remember_alone(rec);
            }
            return rec.key.group.is_some().then(|| format!("{group} alone"));
        };
        let alone_key = PointKey {
            concurrent: None,
            ..rec.key.clone()
        };
        let alone = self.alone_us.iter().find(|(k, _)| *k == alone_key);
        rec.slowdown = alone.map(|(_, us)| rec.time_us_median / us);
        let slowdown = rec.slowdown.map_or("?".into(), |s| format!("{s:.2}"));
        if rec.key.group.is_none() {
            let compute = (rec.compute_slowdown).map_or("?".into(), |s| format!("{s:.2}"));
            return Some(format!(
                "with {with}: call x{slowdown}, compute x{compute} of alone"
            ));
        }
        rec.aggregate_busbw_gbps = aggregate;
        let all = aggregate.map_or(String::new(), |a| format!(", all groups {a:.3} GB/s"));
        Some(format!("{group} with {with}: x{slowdown} of alone{all}"))
    }

    /// Keeps a call's median time alone for the same call beside others that follows it.
    fn remember_alone(&mut self, rec: &PointRecord) {
        self.alone_us.retain(|(k, _)| *k != rec.key);
        self.alone_us.push((rec.key.clone(), rec.time_us_median));
        // A call beside others follows its alone points directly (at most one per group), so
        // the last ones are all it needs: the search stays short on long plans.
        let keep = 2 * crate::model::split::MAX_GROUPS;
        if self.alone_us.len() > keep {
            self.alone_us.remove(0);
        }
    }

    fn count(&mut self, rec: &PointRecord) {
        self.wrong_points += usize::from(rec.wrong > 0);
    }

    /// Ends the run: the console finished, meta.json saying how the measuring ended
    /// (`result`), and the outcome.
    pub fn close(self, result: Result<()>) -> Result<Outcome> {
        let json = self.console.finish();
        let wrong_points = self.wrong_points;
        // The measuring's own error first; else a failed --json-out fails the run.
        let result = result.and(json.map_or(Ok(()), Err));
        close_run(self.out, self.dir, result.map(|()| wrong_points))
    }
}

/// The record with the time it is written (summary.csv's `ended_utc`), to the millisecond.
fn stamped(rec: &PointRecord) -> PointRecord {
    let mut rec = rec.clone();
    let now = humantime::format_rfc3339_millis(std::time::SystemTime::now());
    rec.ended_utc = Some(now.to_string());
    rec
}

/// Records how a run ended in meta.json and turns the measuring's result (points with wrong
/// elements) into the outcome. Also for a run that writes no point (an NCCL rehearsal).
pub(crate) fn close_run(mut out: RunDir, dir: PathBuf, result: Result<usize>) -> Result<Outcome> {
    let (status, error) = match &result {
        Ok(_) => (RunStatus::Complete, None),
        Err(e @ Error::Interrupted(_)) => (RunStatus::Interrupted, Some(e.to_string())),
        Err(e) => (RunStatus::Failed, Some(e.to_string())),
    };
    let finished = out.finish(status, error);
    // The measuring's error first: it names the file whose write failed (a full disk fails
    // meta.json's rewrite as well).
    let wrong_points = result?;
    finished?;
    Ok(Outcome {
        dir,
        points: out.points(),
        wrong_points,
    })
}

/// The console of a sweep, with the plan's notes shown once and the table's header printed.
fn open_console(plan: &Plan, view: &View, meta: &Meta) -> Console {
    let console = Console::new(&plan.points, view, meta);
    // The plan repeats a note for every curve it applies to (each algorithm and placement).
    let mut shown: Vec<&str> = Vec::new();
    for note in &plan.notes {
        if !shown.contains(&note.as_str()) {
            shown.push(note);
            console.note(note);
        }
    }
    console.header();
    console
}
