//! The `collbench compare` command: read two results folders, match, print, exit 1 on a
//! regression.

use std::path::PathBuf;

use super::diff::{compare, Comparison, PointDiff, Rule, Status};
use crate::accept::table::{exact, layout, sig};
use crate::error::{Error, Result};
use crate::report::run_reader::{read_run, Run};

/// Unmatched points listed by name before "and N more".
const LIST_UNMATCHED: usize = 8;

/// What `collbench compare` was asked to do.
#[derive(Debug, Clone)]
pub struct CompareRequest {
    pub a: PathBuf,
    pub b: PathBuf,
    /// When a difference counts.
    pub rule: Rule,
    pub json: bool,
}

/// Runs the command: 0 no regression, 1 a regression, errors (exit 2) for unreadable folders
/// or runs with no point in common.
pub fn run_compare(req: &CompareRequest) -> Result<u8> {
    let a = read_run(&req.a)?;
    let b = read_run(&req.b)?;
    let mut c = compare(&a.points, &b.points, &req.rule);
    c.a = req.a.display().to_string();
    c.b = req.b.display().to_string();
    note_differences(&a, &b, &mut c);
    if c.points.is_empty() {
        return Err(Error::usage(format!(
            "{} and {} have no point in common (op, algo, proto, dtype, world, bytes, \
             in_place); compare runs of the same sweep",
            c.a, c.b
        )));
    }
    if req.json {
        let text = serde_json::to_string_pretty(&c)
            .map_err(|e| Error::usage(format!("cannot encode the comparison: {e}")))?;
        crate::output::stdout::println(&text);
    } else {
        crate::output::stdout::print(&render(&c));
    }
    Ok(u8::from(c.regressions > 0))
}

/// Notes when the two runs differ in how they were measured.
fn note_differences(a: &Run, b: &Run, c: &mut Comparison) {
    let (ma, mb) = (&a.meta, &b.meta);
    let pairs = [
        ("backend", &ma.backend, &mb.backend),
        ("transport", &ma.transport, &mb.transport),
        ("host", &ma.host.hostname, &mb.host.hostname),
    ];
    for (what, x, y) in pairs {
        if x != y {
            c.notes.push(format!("{what} differs: A {x}, B {y}"));
        }
    }
}

/// The table, the unmatched points and the summary line.
pub fn render(c: &Comparison) -> String {
    let mut rows: Vec<Vec<String>> = vec![[
        "point",
        "time A us",
        "time B us",
        "B/A time",
        "busbw A GB/s",
        "busbw B GB/s",
        "B/A busbw",
        "status",
    ]
    .map(String::from)
    .to_vec()];
    rows.extend(c.points.iter().map(row));
    let mut out = layout(&rows);
    for (side, list) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !list.is_empty() {
            out.push_str(&format!("only in {side}: {}\n", listing(list)));
        }
    }
    for n in &c.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push_str(&format!(
        "compare: {} points matched, {} regression(s) beyond +{} median time, {} and noise \
         (p <= {}), {} faster, {} only in A, {} only in B\n",
        c.points.len(),
        c.regressions,
        exact(c.threshold, "fraction"),
        exact(c.min_diff_us, "us"),
        c.alpha,
        c.faster,
        c.only_in_a.len(),
        c.only_in_b.len()
    ));
    out
}

fn listing(list: &[String]) -> String {
    let shown = list.len().min(LIST_UNMATCHED);
    let mut text = list[..shown].join(", ");
    if list.len() > shown {
        text.push_str(&format!(", and {} more", list.len() - shown));
    }
    text
}

fn row(p: &PointDiff) -> Vec<String> {
    let r = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.3}"));
    let status = match p.status {
        Status::Same => String::new(),
        Status::Faster => "faster".into(),
        Status::Regression => format!(
            "REGRESSION (+{:.1}% time)",
            (p.time_ratio.unwrap_or(1.0) - 1.0) * 100.0
        ),
        Status::Wrong => format!("WRONG ({} wrong elements in B)", p.wrong_b),
        Status::Undefined => "no time".into(),
    };
    vec![
        p.label.clone(),
        sig(p.time_us_a),
        sig(p.time_us_b),
        r(p.time_ratio),
        sig(p.busbw_gbps_a),
        sig(p.busbw_gbps_b),
        r(p.busbw_ratio),
        status,
    ]
}
