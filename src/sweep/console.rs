//! What the user sees while a sweep runs: the live table on stdout and, when stderr is a
//! terminal, a progress bar that never garbles the table.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use std::cell::RefCell;

use crate::meta::Meta;
use crate::model::plan::Point;
use crate::model::record::PointRecord;
use crate::named::named_enum;
use crate::report::table;
use crate::sweep::nccl_tables::{NcclTables, Outputs};

named_enum!(
    /// The live table's format.
    TableFormat, "table format", {
        /// collbench's own columns, one row per point.
        Collbench => "collbench",
        /// nccl-tests 2.19's text, for the parsers of its logs.
        NcclTests => "nccl-tests",
    }
);

/// How a sweep shows itself: the table's format, whether a progress bar may be shown, and
/// where nccl-tests' `-J` JSON of the tables goes.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub progress: bool,
    pub format: TableFormat,
    pub json: Option<std::path::PathBuf>,
    /// `--metrics`: the Prometheus file, replaced after each point.
    pub metrics: Option<std::path::PathBuf>,
}

/// Console output of one sweep.
pub struct Console {
    bar: Option<ProgressBar>,
    /// The nccl-tests tables, with `--format nccl-tests`.
    nccl: Option<RefCell<NcclTables>>,
    /// The Prometheus metrics, with `--metrics`.
    metrics: Option<RefCell<MetricsFile>>,
    /// Each point's share of the work, in plan order ([`work`]): the bar and its ETA advance
    /// by it, so that a 1 GiB point counts for what it costs, not as much as an 8 B one.
    weights: Vec<u64>,
    done: std::cell::Cell<usize>,
}

/// A point's expected cost, in nanoseconds of a nominal machine (5 µs per call plus 5 GB/s,
/// and the host's fill and check of its bytes): only its ratio to other points' matters.
pub fn work(p: &Point) -> u64 {
    let calls = (p.warmup + 2 * p.iters + 1) as u64;
    let bytes = p.call.shape.bytes as u64;
    calls
        .saturating_mul(5_000 + bytes / 5)
        .saturating_add(bytes.saturating_mul(8))
        .max(1)
}

impl Console {
    /// A console for the points of `plan` of the run `meta` describes; the bar is shown only
    /// on a terminal and when wanted.
    pub fn new(points: &[Point], view: &View, meta: &Meta) -> Console {
        let want_bar = view.progress;
        let outputs = Outputs {
            text: view.format == TableFormat::NcclTests,
            json: view.json.clone(),
            args: meta.command_line.clone(),
        };
        let nccl = (outputs.text || outputs.json.is_some())
            .then(|| RefCell::new(NcclTables::new(points, meta, outputs)));
        let weights: Vec<u64> = points.iter().map(work).collect();
        let total = weights.iter().fold(0u64, |a, w| a.saturating_add(*w));
        let bar = (want_bar && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {prefix} points, ETA {eta}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_prefix(format!("0/{}", points.len()));
            // Ticks on its own, so that the clock and spinner move during a long point.
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let metrics = (view.metrics.clone())
            .map(|path| RefCell::new(MetricsFile::new(path, &meta.host.hostname)));
        Console {
            bar,
            nccl,
            metrics,
            weights,
            done: std::cell::Cell::new(0),
        }
    }

    /// Counts one more point done on the bar; a soak's next cycle starts the bar again.
    fn advance(&self) {
        let k = self.done.get();
        self.done.set(k + 1);
        let n = self.weights.len().max(1);
        let (cycle, i) = (k / n, k % n);
        if let Some(bar) = &self.bar {
            if i == 0 && cycle > 0 {
                bar.set_position(0);
            }
            bar.inc(self.weights.get(i).copied().unwrap_or(1));
            bar.set_prefix(match cycle {
                0 => format!("{}/{n}", i + 1),
                c => format!("cycle {c}: {}/{n}", i + 1),
            });
        }
    }

    /// A soak's first point of each cycle after the first: a note line saying which cycle
    /// starts (collbench's table only: nccl-tests' repeats its rows without one).
    fn cycle_note(&self, rec: &PointRecord) {
        let n = self.weights.len().max(1);
        let k = self.done.get();
        if k % n == 0 && k > 0 && !self.nccl_text() {
            let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
            self.note(&format!("cycle {} from {now}", rec.cycle));
        }
    }

    fn print(&self, line: &str) {
        // A closed or full stdout (e.g. `| head`) must not stop the measurement: results go to
        // disk, and a full stdout is reported when the sweep ends.
        let out = || crate::output::stdout::println(line);
        match &self.bar {
            Some(bar) => bar.suspend(out),
            None => out(),
        }
    }

    /// Prints the table header (nccl-tests' tables print their own, each).
    pub fn header(&self) {
        if !self.nccl_text() {
            self.print(&table::header());
        }
    }

    /// Whether the live table is nccl-tests' text.
    fn nccl_text(&self) -> bool {
        self.nccl.as_ref().is_some_and(|t| t.borrow().prints_text())
    }

    /// Prints a note line (a comment line in both formats).
    pub fn note(&self, msg: &str) {
        self.print(&table::note(msg));
    }

    /// Prints what the nccl-tests tables give for `lines`.
    fn print_all(&self, lines: Vec<String>) {
        for line in lines {
            self.print(&line);
        }
    }

    /// Says which point is running now.
    pub fn running(&self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(what.to_string());
        }
    }

    /// Prints a measured point and advances the bar.
    pub fn point(&self, rec: &PointRecord) {
        self.show(rec);
        self.advance();
    }

    fn show(&self, rec: &PointRecord) {
        self.cycle_note(rec);
        self.export(rec);
        if let Some(t) = &self.nccl {
            self.print_all(t.borrow_mut().point(rec));
        }
        if !self.nccl_text() {
            self.print(&table::row(rec));
        }
    }

    /// Prints a measured point with what the row alone does not say (a `--pairs` point's two
    /// nodes) after it, and advances the bar.
    pub fn point_tagged(&self, rec: &PointRecord, tag: &str) {
        self.show_tagged(rec, tag);
        self.advance();
    }

    /// A row of a planned point, tagged with what the row alone does not say (a `--split`
    /// group, a call beside others) where there is something; the bar advances after the
    /// point's `last` row only, since the plan counts the groups that run at once as one point.
    pub fn point_row(&self, rec: &PointRecord, tag: Option<&str>, last: bool) {
        match tag {
            Some(tag) => self.show_tagged(rec, tag),
            None => self.show(rec),
        }
        if last {
            self.advance();
        }
    }

    fn show_tagged(&self, rec: &PointRecord, tag: &str) {
        self.cycle_note(rec);
        self.export(rec);
        if let Some(t) = &self.nccl {
            if self.nccl_text() {
                self.print(&table::note(tag));
            }
            self.print_all(t.borrow_mut().point(rec));
        }
        if !self.nccl_text() {
            self.print(&format!("{}  {tag}", table::row(rec)));
        }
    }

    /// Puts a point in the metrics file.
    fn export(&self, rec: &PointRecord) {
        if let Some(m) = &self.metrics {
            m.borrow_mut().point(rec);
        }
    }

    /// Ends the nccl-tests tables and removes the bar; the JSON or metrics file's write error,
    /// if any.
    pub fn finish(&self) -> Option<crate::error::Error> {
        let mut error = self
            .metrics
            .as_ref()
            .and_then(|m| m.borrow_mut().error.take());
        if let Some(t) = &self.nccl {
            let (lines, e) = t.borrow_mut().finish();
            self.print_all(lines);
            error = error.or(e);
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        error
    }
}

/// The `--metrics` file: every point so far (the latest of each label set), written whole after
/// each point; the first write error is kept for the end and stops later writes.
struct MetricsFile {
    path: std::path::PathBuf,
    node: String,
    points: Vec<PointRecord>,
    error: Option<crate::error::Error>,
}

impl MetricsFile {
    fn new(path: std::path::PathBuf, node: &str) -> MetricsFile {
        MetricsFile {
            path,
            node: node.to_string(),
            points: Vec::new(),
            error: None,
        }
    }

    fn point(&mut self, rec: &PointRecord) {
        if self.error.is_some() {
            return;
        }
        // A point of the same key (a --pairs run's next pair) replaces the earlier one: a
        // metric has one value per label set.
        self.points.retain(|p| p.key != rec.key);
        self.points.push(rec.clone());
        let text = crate::report::prometheus::render(&self.points, &self.node);
        if let Err(e) = crate::output::file::write_atomic(&self.path, text.as_bytes()) {
            self.error = Some(e);
        }
    }
}

#[cfg(test)]
mod work_tests {
    use super::*;
    use crate::model::plan::SweepOptions;

    #[test]
    fn a_large_point_weighs_what_it_costs_and_every_point_weighs_something() {
        let line = [
            "collbench",
            "sweep",
            "--op",
            "allreduce",
            "--ranks",
            "2",
            "-b",
            "8",
            "-e",
            "8G",
            "-f",
            "1024",
        ];
        let args = crate::sweep::args::parse_sweep_line(line.to_vec()).unwrap();
        let req = args.into_request(vec![]).unwrap();
        let plan: Vec<Point> = SweepOptions::plan(&req.opts).points;
        let w: Vec<u64> = plan.iter().map(work).collect();
        assert_eq!(w.len(), 4, "8 B, 8 KiB, 8 MiB and 8 GiB");
        assert!(w.iter().all(|&x| x > 0));
        // The 8 GiB point is most of the sweep's work; the small ones are not counted alike.
        let total: u64 = w.iter().sum();
        assert!(w[3] * 2 > total, "{w:?}");
        assert!(w[0] < w[2] && w[2] < w[3], "{w:?}");
    }
}
