//! Reading the text nccl-tests prints: header, rank list, the table (with or without `root`,
//! `#wrong` or an old release's `error`, out-of-place and in-place halves) and footer, through
//! launcher prefixes, NCCL INFO lines and stray output of other processes; several runs per file.
//!
//! A run starts at its `# nThread ...` header (or, without one, at its column header) and ends
//! at `# Avg bus bandwidth`, at the next run's header, or at the end of the file; one that ends
//! inside its table without a footer was cut and keeps its complete rows.

use super::lines::{comment_words, is_library_line, last_digit_step, strip_prefixes};
use super::log::{Half, LogRun, RankLine, Row};
use super::ParseError;

/// The columns of a table, from its header line.
#[derive(Clone, Debug)]
struct Columns {
    /// Whether there is a `redop` column after `type` (old releases print none for ops that do
    /// not reduce).
    redop: bool,
    /// Whether there is a `root` column.
    root: bool,
    /// Groups of (time, algbw, busbw, wrong|error): 1 or 2.
    halves: usize,
}

impl Columns {
    fn lead(&self) -> usize {
        3 + usize::from(self.redop) + usize::from(self.root)
    }

    fn fields(&self) -> usize {
        self.lead() + 4 * self.halves
    }
}

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
        let numeric = fields[0].bytes().all(|b| b.is_ascii_digit());
        if let (true, Some(cols)) = (numeric, self.columns.clone()) {
            return self.row(n, &fields, &cols);
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
                "a table header with columns collbench does not read (nccl-tests -I, -S and -C \
                 add i_min.., timestamp and cputime): `# {}`",
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

    fn row(&mut self, n: usize, fields: &[&str], cols: &Columns) -> Result<(), ParseError> {
        let mut fields = fields.to_vec();
        if cols.redop
            && fields.len() + 1 == cols.fields()
            && fields.get(3).is_some_and(|f| is_number(f))
        {
            // hypercube_perf prints an empty redop: the column is there but holds no word.
            fields.insert(3, "");
        }
        let cut_here = n == self.last_line && !self.ends_whole;
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

/// Lines printed before a run's header that belong to it, not to the run before.
fn starts_next_run(s: &str) -> bool {
    let words = comment_words(s).unwrap_or_default();
    matches!(
        words.as_slice(),
        ["nccl-tests", "version", ..] | ["Collective", "test", "starting:", ..] | ["nThread", ..]
    ) || s.starts_with("nThread ")
        || s.starts_with("NCCL version ")
}

/// The `key value` settings of a `# nThread 1 nGpus 8 minBytes 8 ... iters: 20 ...` header.
fn header_settings(w: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut key: Vec<&str> = Vec::new();
    for word in w {
        let is_value = word.starts_with(|c: char| c.is_ascii_digit() || c == '-');
        if is_value && !key.is_empty() {
            let name = key.join(" ").trim_end_matches(':').to_string();
            out.push((name, word.to_string()));
            key.clear();
        } else if !is_value {
            key.push(word);
        }
    }
    out
}

/// `nccl-library=21903` → `NCCL 2.19.3` (codes below 10000 are 2.8 and older: X*1000+Y*100+Z).
fn nccl_version(code: &str) -> Option<String> {
    let c: u32 = code.parse().ok()?;
    let (major, minor, patch) = if c >= 10000 {
        (c / 10000, c % 10000 / 100, c % 100)
    } else {
        (c / 1000, c % 1000 / 100, c % 100)
    };
    Some(format!("NCCL {major}.{minor}.{patch}"))
}

/// `Rank 0 [Group 0] Pid 1234 on host device 0 [0x1b] NVIDIA H100 80GB HBM3`.
fn parse_rank_line(w: &[&str]) -> Option<RankLine> {
    let after = |key: &str| w.iter().position(|x| *x == key).and_then(|i| w.get(i + 1));
    let rank = after("Rank")?.parse().ok()?;
    let host = after("on")?.to_string();
    let device_at = w.iter().position(|x| *x == "device");
    let device = device_at.and_then(|i| w.get(i + 1)?.parse().ok());
    // The name follows the bus id (`[0x1b]`), or the device number when there is none.
    let mut name_from = device_at.map_or(w.len(), |i| i + 2);
    if w.get(name_from).is_some_and(|x| x.starts_with('[')) {
        name_from += 1;
    }
    Some(RankLine {
        rank,
        host,
        pid: after("Pid").and_then(|p| p.parse().ok()),
        device,
        gpu: w.get(name_from..).map_or(String::new(), |n| n.join(" ")),
    })
}

/// The columns of `size count type redop [root] time algbw busbw #wrong|error [x2]`.
fn parse_columns(w: &[&str]) -> Option<Columns> {
    let names: Vec<String> = w
        .iter()
        .map(|x| x.trim_start_matches('#').to_ascii_lowercase())
        .filter(|x| !x.is_empty())
        .collect();
    let lead = names.iter().position(|x| x == "time")?;
    let lead_names: Vec<&str> = names[..lead].iter().map(String::as_str).collect();
    let (redop, root) = match lead_names.as_slice() {
        ["size", "count", "type"] => (false, false),
        ["size", "count", "type", "redop"] => (true, false),
        ["size", "count", "type", "root"] => (false, true),
        ["size", "count", "type", "redop", "root"] => (true, true),
        _ => return None,
    };
    let groups = &names[lead..];
    let halves = groups.len() / 4;
    let group_ok = |g: &[String]| {
        g[0] == "time" && g[1] == "algbw" && g[2] == "busbw" && (g[3] == "wrong" || g[3] == "error")
    };
    if groups.len() % 4 != 0 || !(1..=2).contains(&halves) || !groups.chunks(4).all(group_ok) {
        return None;
    }
    Some(Columns {
        redop,
        root,
        halves,
    })
}

/// One table row.
fn parse_row(n: usize, f: &[&str], cols: &Columns) -> Result<Row, ParseError> {
    let bad = |msg: String| ParseError { line: n, msg };
    if f.len() != cols.fields() {
        return Err(bad(format!(
            "a table row with {} fields where the table has {}",
            f.len(),
            cols.fields()
        )));
    }
    let int = |i: usize, what: &str| {
        f[i].parse::<u64>()
            .map_err(|_| bad(format!("{what} '{}' is not a whole number", f[i])))
    };
    let root = match cols.root {
        true => {
            let at = cols.lead() - 1;
            let root = f[at].parse::<i64>();
            Some(root.map_err(|_| bad(format!("root '{}' is not a number", f[at])))?)
        }
        false => None,
    };
    let lead = cols.lead();
    let half = |h: usize| parse_half(&f[lead + 4 * h..lead + 4 * h + 4]).map_err(&bad);
    Ok(Row {
        bytes: int(0, "size")?,
        count: Some(int(1, "count")?),
        type_name: f[2].to_string(),
        redop_name: if cols.redop { f[3] } else { "none" }.to_string(),
        root,
        out_of_place: half(0)?,
        in_place: if cols.halves == 2 { half(1)? } else { None },
        line: n,
    })
}

/// `time algbw busbw wrong|error`; `None` where the time is `N/A` (no such measurement).
fn parse_half(f: &[&str]) -> Result<Option<Half>, String> {
    if f[0] == "N/A" {
        return Ok(None);
    }
    let time_us = positive(f[0], "time")?;
    let bw = |t: &str| match t {
        "N/A" => Ok(None),
        _ => number(t, "bandwidth").map(Some),
    };
    let (wrong, error) = match f[3] {
        "N/A" => (None, None),
        t if t.bytes().all(|b| b.is_ascii_digit()) => (
            Some(
                t.parse::<u64>()
                    .map_err(|_| format!("#wrong '{t}' is too large"))?,
            ),
            None,
        ),
        t => (None, Some(number(t, "error")?)),
    };
    Ok(Some(Half {
        time_us,
        min_us: None,
        max_us: None,
        algbw_gbps: bw(f[1])?,
        busbw_gbps: bw(f[2])?,
        wrong,
        error,
        iters: None,
        time_step_us: last_digit_step(f[0]),
    }))
}

fn is_number(t: &str) -> bool {
    t.parse::<f64>().is_ok()
}

/// A finite number, or an error naming the column.
pub(super) fn number(t: &str, what: &str) -> Result<f64, String> {
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("{what} '{t}' is not a number")),
    }
}

/// A finite positive number, or an error naming the column.
pub(super) fn positive(t: &str, what: &str) -> Result<f64, String> {
    match number(t, what)? {
        x if x > 0.0 => Ok(x),
        _ => Err(format!("{what} '{t}' is not a positive number")),
    }
}

#[cfg(test)]
#[path = "nccl_text_tests.rs"]
mod tests;
