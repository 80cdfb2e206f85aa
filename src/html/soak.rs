//! The report's soak section: for a run of several cycles (`--cycles`, `--duration`), each
//! point's drift from the first cycles to the last, its spikes and stalls, and the cycles with
//! wrong results ([`crate::report::soak`]).

use super::page::{esc, fixed, num, pct, table, text, Cell};
use crate::fit::schema::algo_label;
use crate::report::run_reader::Run;
use crate::report::soak::{analyze, Soak, SoakPoint, SPIKE, STALL};
use crate::units::format_size;

/// Rows shown; the rest are counted.
const SHOWN: usize = 24;

/// A drift past this fraction either way is marked.
pub const DRIFT_MARK: f64 = 0.1;

/// The section's body; a note where the run measured one cycle.
pub fn section(run: &Run) -> String {
    let rows: Vec<_> = run.points.iter().map(|p| p.record.clone()).collect();
    match analyze(&rows) {
        Some(s) => body(&s),
        None => note(
            "One cycle: not a soak. collbench sweep --cycles N or --duration TIME measures the \
             plan again and again and this section shows each point's drift.",
        ),
    }
}

fn note(msg: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", esc(msg))
}

fn body(s: &Soak) -> String {
    let span = s
        .span
        .as_ref()
        .map_or(String::new(), |(a, b)| format!(" from {a} to {b}"));
    let wrong: usize = s.points.iter().map(|p| p.wrong_cycles).sum();
    let mut out = note(&format!(
        "{} cycles of {} points{span}. Drift: the median time of the last quarter of the cycles \
         over the first quarter's, minus one. Spike: a cycle whose median exceeds {SPIKE}x the \
         point's median over cycles; stall: a cycle whose slowest iteration exceeds {STALL}x \
         it. {}",
        s.cycles,
        s.points.len(),
        match wrong {
            0 => "No cycle had a wrong element.".to_string(),
            n => format!("{n} point-cycles had wrong elements."),
        }
    ));
    let mut order: Vec<&SoakPoint> = s.points.iter().collect();
    order.sort_by(|a, b| magnitude(b).total_cmp(&magnitude(a)));
    let shown: Vec<(Vec<Cell>, Option<&str>)> = order
        .iter()
        .take(SHOWN)
        .map(|p| (row(p), marked(p).then_some("fail")))
        .collect();
    out.push_str(&table(&HEAD, &shown));
    if order.len() > SHOWN {
        out.push_str(&note(&format!("and {} more", order.len() - SHOWN)));
    }
    out
}

fn magnitude(p: &SoakPoint) -> f64 {
    p.drift.map_or(-1.0, f64::abs)
}

fn marked(p: &SoakPoint) -> bool {
    p.wrong_cycles > 0 || p.stalls > 0 || p.drift.is_some_and(|d| d.abs() > DRIFT_MARK)
}

const HEAD: [&str; 10] = [
    "point",
    "cycles",
    "median (µs)",
    "drift",
    "slowest cycle",
    "× median",
    "spikes",
    "stalls",
    "wrong cycles",
    "size",
];

fn row(p: &SoakPoint) -> Vec<Cell> {
    let k = &p.first.key;
    vec![
        text(format!(
            "{} {} {} w{}{}",
            k.op,
            algo_label(k.algo, k.proto) + &k.comm.label(),
            k.dtype,
            k.world,
            if k.in_place { " in place" } else { "" }
        )),
        num(p.cycles.to_string()),
        num(fixed(p.median_us, 2)),
        num(p.drift.map_or("-".into(), pct)),
        num(p.worst.0.to_string()),
        num(fixed(p.worst.1, 2)),
        num(p.spikes.to_string()),
        num(p.stalls.to_string()),
        num(p.wrong_cycles.to_string()),
        num(format_size(k.bytes)),
    ]
}
