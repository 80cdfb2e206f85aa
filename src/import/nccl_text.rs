//! Reading the text nccl-tests prints: header, rank list, the table (with or without `root`,
//! `#wrong` or an old release's `error`, out-of-place and in-place halves) and footer, through
//! launcher prefixes, NCCL INFO lines and stray output of other processes; several runs per file.
//!
//! A run starts at its `# nThread ...` header (or, without one, at its column header) and ends
//! at `# Avg bus bandwidth`, at the next run's header, or at the end of the file; one that ends
//! inside its table without a footer was cut and keeps its complete rows.

mod fields;

use super::lines::{comment_words, is_library_line, strip_prefixes};
use super::log::LogRun;
use super::ParseError;
pub(super) use fields::positive;
use fields::{
    header_settings, is_number, nccl_version, parse_columns, parse_rank_line, parse_row, Columns,
};

/// The reader's state while it walks a file.
#[derive(Default)]
struct Reader {
    runs: Vec<LogRun>,
    current: Option<LogRun>,
    columns: Option<Columns>,
    /// The test named by a `# Collective test starting:` line or a command line before the run.
    pending_test: Option<String>,
    version: Option<String>,
    library: Option<String>,
    /// NCCL_ALGO and NCCL_PROTO reported before the run they belong to started.
    pending_env: (Option<String>, Option<String>),
    /// The first line that was nobody's, before any run (for a file that is no log at all).
    first_unknown: Option<usize>,
    /// The last non-blank line of the file: a short row there was cut, not malformed.
    last_line: usize,
    /// Whether the text ends with a line break (or a blank line): when it does not, its last
    /// line may have been cut inside a field (`2e-0`), and a row there is not trusted.
    ends_whole: bool,
}

/// Reads every nccl-tests run of `text`. Fails, naming the line, on a file that holds no
/// nccl-tests table or on a table row that does not parse (other than a last row cut short).
pub fn parse(text: &str) -> Result<Vec<LogRun>, ParseError> {
    let lines: Vec<&str> = text.lines().map(strip_prefixes).collect();
    let mut r = Reader {
        last_line: lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |i| i + 1),
        // The last line of the text (blank or not) may be cut when no line break ends it.
        ends_whole: text.ends_with('\n') || lines.last().is_some_and(|l| l.is_empty()),
        ..Reader::default()
    };
    for (i, line) in lines.iter().enumerate() {
        r.line(i + 1, line)?;
    }
    r.close(true);
    if r.runs
        .iter()
        .all(|run| run.rows.is_empty() && run.ranks.is_empty())
    {
        let line = r.first_unknown.unwrap_or(r.last_line.max(1));
        return Err(ParseError {
            line,
            msg: "not a nccl-tests log: no `# nThread ...` header or `size count type ...` \
                  table found"
                .into(),
        });
    }
    Ok(r.runs)
}

impl Reader {
    fn line(&mut self, n: usize, s: &str) -> Result<(), ParseError> {
        if s.is_empty() {
            return Ok(());
        }
        if !starts_next_run(s) {
            // Every line up to the next run's preamble belongs to the run (its failure
            // messages included).
            if let Some(run) = &mut self.current {
                run.last_line = n;
            }
        }
        if let Some(v) = s.strip_prefix("NCCL version ") {
            // Rank 0's banner (`NCCL version 2.9.9+cuda11.2`): the library, where the header
            // of older releases does not name it.
            let v = v.split(['+', ' ']).next().unwrap_or(v);
            self.library.get_or_insert_with(|| format!("NCCL {v}"));
            if let Some(run) = &mut self.current {
                run.library.get_or_insert_with(|| format!("NCCL {v}"));
            }
            return Ok(());
        }
        if is_library_line(s) {
            self.library_line(s);
            self.foreign(n, false);
            return Ok(());
        }
        match comment_words(s) {
            Some(words) => self.comment(n, &words),
            None => self.text(n, s),
        }
    }

    /// Keeps what NCCL says of forced algorithms and protocols (`NCCL_ALGO set by environment
    /// to Ring`), for the run it belongs to or the next one.
    fn library_line(&mut self, s: &str) {
        for (var, slot) in [("NCCL_ALGO", 0), ("NCCL_PROTO", 1)] {
            let Some(at) = s.find(&format!("{var} set by environment to ")) else {
                continue;
            };
            let value = s[at..].split_whitespace().nth(5).map(str::to_string);
            let (run_slot, pending) = match (&mut self.current, slot) {
                (Some(run), 0) => (Some(&mut run.env_algo), &mut self.pending_env.0),
                (Some(run), _) => (Some(&mut run.env_proto), &mut self.pending_env.1),
                (None, 0) => (None, &mut self.pending_env.0),
                (None, _) => (None, &mut self.pending_env.1),
            };
            match run_slot {
                Some(slot) => *slot = value,
                None => *pending = value,
            }
        }
    }

    /// A line that is not the benchmark's: counted inside a run, remembered before any.
    fn foreign(&mut self, n: usize, unknown: bool) {
        match &mut self.current {
            Some(run) => run.foreign_lines += 1,
            None if unknown && self.runs.is_empty() => {
                self.first_unknown.get_or_insert(n);
            }
            None => {}
        }
    }

    fn comment(&mut self, n: usize, w: &[&str]) -> Result<(), ParseError> {
        match w {
            [] => {}
            ["nThread", ..] => self.start(n, header_settings(w)),
            ["nccl-tests", "version", rest @ ..] => self.version_line(rest),
            ["Collective", "test", "starting:", test, ..] => {
                self.pending_test = Some(test.to_string())
            }
            ["Rank", ..] => self.rank(n, w)?,
            ["Out", "of", "bounds", ..] => {}
            ["Collective", "test", "concluded:", ..] => self.pending_test = None,
            ["Avg", "bus", "bandwidth", ..] => self.close(false),
            _ if w.contains(&"size") && w.contains(&"time") => self.columns_line(n, w)?,
            _ => self.note_test(w),
        }
        Ok(())
    }

    fn text(&mut self, n: usize, s: &str) -> Result<(), ParseError> {
        let fields: Vec<&str> = s.split_whitespace().collect();
        if fields[0] == "nThread" {
            // Releases of 2017 printed the header without its `#`.
            self.start(n, header_settings(&fields));
            return Ok(());
        }
        // Any number, not only digits: a row whose size is negative or 1e20 is refused by
        // the row's parser, naming the line, instead of passing as a foreign line.
        let numeric = is_number(fields[0]);
        if let (true, Some(cols)) = (numeric, self.columns.clone()) {
            return self.row(n, &fields, &cols, blank_first_half(s));
        }
        self.note_test(&fields);
        self.foreign(n, true);
        Ok(())
    }

    /// Remembers a test binary named on a command line (`.../all_reduce_perf -b 8 ...`).
    fn note_test(&mut self, words: &[&str]) {
        let named = words.iter().find_map(|w| {
            let base = w.rsplit('/').next().unwrap_or(w);
            let stem = base.strip_suffix("_mpi").unwrap_or(base);
            let ok = stem.ends_with("_perf") && stem.len() > 5 && base.len() < 64;
            (ok && base.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')).then_some(base)
        });
        if let Some(test) = named {
            self.pending_test = Some(test.to_string());
        }
    }

    fn version_line(&mut self, rest: &[&str]) {
        self.version = rest.first().map(|v| v.to_string());
        let code = rest.iter().find_map(|w| w.strip_prefix("nccl-library="));
        self.library = code.and_then(nccl_version).or(self.library.take());
    }

    fn start(&mut self, n: usize, header: Vec<(String, String)>) {
        self.close(true);
        self.current = Some(LogRun {
            test: self.pending_test.take(),
            tool_version: self.version.clone(),
            library: self.library.clone(),
            env_algo: self.pending_env.0.take(),
            env_proto: self.pending_env.1.take(),
            header: header.into_iter().collect(),
            first_line: n,
            last_line: n,
            ..LogRun::default()
        });
    }

    /// Ends the current run at its last line; `cut`: it ended without its footer.
    fn close(&mut self, cut: bool) {
        self.columns = None;
        let Some(mut run) = self.current.take() else {
            return;
        };
        run.truncated |= cut;
        self.runs.push(run);
    }

    fn rank(&mut self, n: usize, w: &[&str]) -> Result<(), ParseError> {
        let Some(run) = &mut self.current else {
            return Ok(());
        };
        let rank = parse_rank_line(w).ok_or_else(|| ParseError {
            line: n,
            msg: format!("a rank line that does not parse: `# {}`", w.join(" ")),
        })?;
        run.ranks.push(rank);
        Ok(())
    }

    fn columns_line(&mut self, n: usize, w: &[&str]) -> Result<(), ParseError> {
        let cols = parse_columns(w).ok_or_else(|| ParseError {
            line: n,
            msg: format!(
                "a table header with columns collbench does not read (nccl-tests -S and -C \
                 add timestamp and cputime): `# {}`",
                w.join(" ")
            ),
        })?;
        if self.current.as_ref().is_some_and(|r| !r.rows.is_empty()) {
            // A second table without a header of its own: a new run of the same test.
            let test = self.current.as_ref().and_then(|r| r.test.clone());
            self.pending_test = self.pending_test.take().or(test);
            self.start(n, Vec::new());
        }
        if self.current.is_none() {
            self.start(n, Vec::new());
        }
        self.columns = Some(cols);
        Ok(())
    }

    fn row(
        &mut self,
        n: usize,
        fields: &[&str],
        cols: &Columns,
        blank_first: bool,
    ) -> Result<(), ParseError> {
        let mut fields = fields.to_vec();
        if cols.redop
            && fields.len() + 1 == cols.fields()
            && fields.get(3).is_some_and(|f| is_number(f))
        {
            // hypercube_perf prints an empty redop: the column is there but holds no word.
            fields.insert(3, "");
        }
        let cut_here = n == self.last_line && !self.ends_whole;
        // (Not on a log's last line, where a short row is one the log was cut in.)
        if cols.halves == 2 && fields.len() + cols.width == cols.fields() && n != self.last_line {
            // One half of the two: nccl-tests' blank out-of-place half (32 spaces) before an
            // in-place one, or a table that measured no in-place half (NCCL's point-to-point
            // ops in collbench's --format nccl-tests). The missing half reads as N/A.
            let at = if blank_first {
                cols.lead()
            } else {
                fields.len()
            };
            fields.splice(at..at, std::iter::repeat("N/A").take(cols.width));
        }
        if n == self.last_line && (fields.len() < cols.fields() || cut_here) {
            // The log ends in the middle of this row: keep the rows before it.
            if let Some(run) = &mut self.current {
                // The run's lines end at its last whole row.
                run.last_line = run.rows.last().map_or(n - 1, |r| r.line);
            }
            self.close(true);
            return Ok(());
        }
        let row = parse_row(n, &fields, cols)?;
        if let Some(run) = &mut self.current {
            run.rows.push(row);
            run.last_line = n;
        }
        Ok(())
    }
}

/// Whether a row's first half is blank: nccl-tests prints 32 spaces for a half it did not run
/// (`writeBenchMarkLineNullBody`), where no two columns of a row are ever that far apart.
fn blank_first_half(line: &str) -> bool {
    line.trim()
        .split(|c: char| !c.is_whitespace())
        .any(|gap| gap.len() >= 32)
}

/// Lines printed before a run's header that belong to it, not to the run before.
fn starts_next_run(s: &str) -> bool {
    let words = comment_words(s).unwrap_or_default();
    matches!(
        words.as_slice(),
        ["nccl-tests", "version", ..] | ["Collective", "test", "starting:", ..] | ["nThread", ..]
    ) || s.starts_with("nThread ")
        || s.starts_with("NCCL version ")
}

#[cfg(test)]
#[path = "nccl_text_tests.rs"]
mod tests;
