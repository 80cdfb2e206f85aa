//! What the user sees while a sweep runs: the live table on stdout and, when stderr is a
//! terminal, a progress bar that never garbles the table.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::model::record::PointRecord;
use crate::report::table;

/// Console output of one sweep.
pub struct Console {
    bar: Option<ProgressBar>,
}

impl Console {
    /// A console for `points` points; the bar is shown only on a terminal and when wanted.
    pub fn new(points: usize, want_bar: bool) -> Console {
        let bar = (want_bar && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(points as u64);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} points, ETA {eta}  {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            // Ticks on its own, so that the clock and spinner move during a long point.
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Console { bar }
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

    /// Prints the table header.
    pub fn header(&self) {
        self.print(&table::header());
    }

    /// Prints a note line.
    pub fn note(&self, msg: &str) {
        self.print(&table::note(msg));
    }

    /// Says which point is running now.
    pub fn running(&self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(what.to_string());
        }
    }

    /// Prints a measured point and advances the bar.
    pub fn point(&self, rec: &PointRecord) {
        self.print(&table::row(rec));
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Prints a measured point with what the row alone does not say (a `--pairs` point's two
    /// nodes) after it, and advances the bar.
    pub fn point_tagged(&self, rec: &PointRecord, tag: &str) {
        self.print(&format!("{}  {tag}", table::row(rec)));
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
