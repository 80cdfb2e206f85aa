//! Reading the OSU micro-benchmarks' collective latency tests (`# OSU MPI Allreduce Latency
//! Test v7.4`, `# Size  Avg Latency(us)`, with `-f` also `Min Latency(us)  Max Latency(us)
//! Iterations`), several tests per file.
//!
//! OSU prints no rank list: the world comes from `--world`. Its sizes are converted to
//! nccl-tests semantics where they differ ([`total_bytes`]).

use super::lines::{comment_words, last_digit_step, strip_prefixes};
use super::log::{Half, LogRun, Row};
use super::nccl_text::positive;
use super::ParseError;
use crate::collective::Op;

/// OSU tests that are not collectives collbench measures (the others are [`Op::osu_tests`]).
const OSU_NOT_MEASURED: &[&str] = &["barrier"];

/// The OSU tests collbench reads, by the name in their title, and the op; `None`: not measured.
fn osu_tests() -> impl Iterator<Item = (&'static str, Option<Op>)> {
    let ops = Op::ALL.iter();
    let measured = ops.flat_map(|&op| op.osu_tests().iter().map(move |&t| (t, Some(op))));
    measured.chain(OSU_NOT_MEASURED.iter().map(|&t| (t, None)))
}

/// What the columns of a table are, by position.
#[derive(Clone, Debug, Default)]
struct Columns {
    avg: usize,
    min: Option<usize>,
    max: Option<usize>,
    iters: Option<usize>,
    fields: usize,
}

/// Reads every OSU collective test of `text`.
pub fn parse(text: &str) -> Result<Vec<LogRun>, ParseError> {
    let lines: Vec<&str> = text.lines().map(strip_prefixes).collect();
    let last = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    let mut runs: Vec<LogRun> = Vec::new();
    let mut cols: Option<Columns> = None;
    let mut first_unknown = None;
    for (i, s) in lines.iter().enumerate() {
        let n = i + 1;
        if s.is_empty() {
            continue;
        }
        if let Some(words) = comment_words(s) {
            if let Some(run) = title(&words, n) {
                runs.push(run);
                cols = None;
            } else if let Some(run) = runs.last_mut() {
                cols = comment(run, &words, s).or(cols);
            }
            continue;
        }
        let (Some(run), Some(c)) = (runs.last_mut(), &cols) else {
            first_unknown.get_or_insert(n);
            continue;
        };
        let fields: Vec<&str> = s.split_whitespace().collect();
        if !fields[0].bytes().all(|b| b.is_ascii_digit()) {
            run.foreign_lines += 1;
            continue;
        }
        // A last line without its line break may be cut inside a number (`196016.56` → `1`).
        let ends_whole = text.ends_with('\n') || lines.last().is_some_and(|l| l.is_empty());
        let cut_here = n == last && !ends_whole;
        if n == last && (fields.len() < c.fields || cut_here) {
            run.truncated = true;
            continue;
        }
        run.rows.push(row(n, &fields, c, run)?);
        run.last_line = n;
    }
    if runs.iter().all(|r| r.rows.is_empty()) {
        return Err(ParseError {
            line: first_unknown.unwrap_or(last.max(1)),
            msg: "not an OSU collective latency log: no `# OSU MPI ... Latency Test` title with \
                  a `# Size  Avg Latency(us)` table found"
                .into(),
        });
    }
    Ok(runs)
}

/// `# OSU MPI[-CUDA] Allreduce Latency Test v7.4` starts a run.
fn title(w: &[&str], n: usize) -> Option<LogRun> {
    if w.first() != Some(&"OSU") || !w.contains(&"Test") {
        return None;
    }
    let from = w.iter().position(|x| x.starts_with("MPI"))? + 1;
    let to = w.iter().position(|x| *x == "Latency" || *x == "Test")?;
    let name = w.get(from..to)?.join(" ");
    let version = w
        .last()
        .and_then(|v| v.strip_prefix('v'))
        .map(str::to_string);
    Some(LogRun {
        test: Some(name),
        tool_version: version,
        first_line: n,
        last_line: n,
        ..LogRun::default()
    })
}

/// A comment inside a run: the datatype line, or the column header (returned).
fn comment(run: &mut LogRun, w: &[&str], line: &str) -> Option<Columns> {
    if w.first() == Some(&"Datatype:") {
        let t = w.get(1).map_or("", |t| t.trim_end_matches('.'));
        run.header.insert("datatype".into(), t.into());
        return None;
    }
    if w.first() != Some(&"Size") {
        return None;
    }
    // Column names hold single spaces (`Avg Latency(us)`); columns are two or more apart.
    let body = line.trim_start_matches('#');
    let names: Vec<String> = body
        .split("  ")
        .map(|x| x.trim().to_ascii_lowercase())
        .filter(|x| !x.is_empty())
        .collect();
    let at = |prefix: &str| names.iter().position(|x| x.starts_with(prefix));
    Some(Columns {
        avg: at("avg")?,
        min: at("min"),
        max: at("max"),
        iters: at("iterations"),
        fields: names.len(),
    })
}

/// One table row; the element type is the run's `# Datatype:` or OSU's default for the test.
fn row(n: usize, f: &[&str], c: &Columns, run: &LogRun) -> Result<Row, ParseError> {
    let bad = |msg: String| ParseError { line: n, msg };
    if f.len() != c.fields {
        return Err(bad(format!(
            "a table row with {} fields where the table has {}",
            f.len(),
            c.fields
        )));
    }
    let bytes = f[0]
        .parse::<u64>()
        .map_err(|_| bad(format!("size '{}' is not a whole number", f[0])))?;
    let value = |i: usize, what| positive(f[i], what).map_err(&bad);
    let iters = match c.iters {
        Some(i) => Some(
            f[i].parse::<usize>()
                .map_err(|_| bad(format!("iterations '{}' is not a whole number", f[i])))?,
        ),
        None => None,
    };
    Ok(Row {
        bytes,
        count: None,
        type_name: datatype(run),
        redop_name: "sum".into(),
        root: None,
        out_of_place: Some(Half {
            time_us: value(c.avg, "avg latency")?,
            min_us: c.min.map(|i| value(i, "min latency")).transpose()?,
            max_us: c.max.map(|i| value(i, "max latency")).transpose()?,
            algbw_gbps: None,
            busbw_gbps: None,
            wrong: None,
            error: None,
            iters,
            time_step_us: last_digit_step(f[c.avg]),
            samples: Vec::new(),
            spread: None,
        }),
        in_place: None,
        line: n,
    })
}

/// The run's element type in nccl-tests' words: `# Datatype:` (OSU 7), else what OSU 5 and 6
/// used: MPI_FLOAT for reductions, MPI_CHAR otherwise.
fn datatype(run: &LogRun) -> String {
    let given = run.header.get("datatype").map(String::as_str);
    let reduces = run
        .test
        .as_deref()
        .and_then(|t| lookup(t).ok())
        .is_some_and(Op::reduces);
    match given {
        Some("MPI_FLOAT") => "float",
        Some("MPI_DOUBLE") => "double",
        Some("MPI_INT") => "int32",
        Some("MPI_CHAR") | Some("MPI_SIGNED_CHAR") => "char",
        Some(other) => other,
        None if reduces => "float",
        None => "char",
    }
    .to_string()
}

fn lookup(test: &str) -> Result<Op, String> {
    let lower = test.to_ascii_lowercase();
    match osu_tests().find(|(name, _)| *name == lower) {
        Some((_, Some(op))) => Ok(op),
        Some((name, None)) => Err(format!(
            "OSU {name}: collbench does not measure {name} yet; this run was not imported"
        )),
        None => Err(format!(
            "OSU test '{test}' is not a collective collbench reads"
        )),
    }
}

/// The op of an OSU run: `--test` (a collective's name, e.g. `allreduce`), else its title.
pub fn op_of(run: &LogRun, test: Option<&str>) -> Result<Op, String> {
    let op = |t: &str| lookup(t.trim_start_matches("osu_"));
    let own = run.test.as_deref().map(op).transpose()?;
    match (test.map(op).transpose()?, own) {
        (Some(given), Some(own)) if given != own => Err(contradiction(
            &format!("an OSU {own} log"),
            test.unwrap_or_default(),
        )),
        (Some(op), _) | (None, Some(op)) => Ok(op),
        (None, None) => Err("the log names no OSU test; give --test, e.g. --test allreduce".into()),
    }
}

/// A `--test` that contradicts what the log says it is: refused, never a relabel.
pub fn contradiction(own: &str, given: &str) -> String {
    format!(
        "the log says it is {own}, but --test {given} says otherwise; drop --test (it is for \
         logs that do not say)"
    )
}

/// nccl-tests' total size `S` of an OSU size ([`Op::osu_size_per_rank`]).
pub fn total_bytes(op: Op, per_osu: u64, world: usize) -> u64 {
    match op.osu_size_per_rank() {
        true => per_osu.saturating_mul(world as u64),
        false => per_osu,
    }
}

#[cfg(test)]
#[path = "osu_tests.rs"]
mod tests;
