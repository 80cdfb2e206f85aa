//! The report's straggler section: from samples.csv, per rank and node how often it was the
//! slowest of an iteration and by how much, persistent or in spikes, and the first-iteration
//! effect ([`crate::report::straggler`]).

use super::page::{esc, fixed, num, pct, table, text, Cell};
use crate::report::run_reader::Run;
use crate::report::straggler::{analyze, PointIters, Straggler, Stragglers, SPIKE};

/// Rows shown per table; the rest are counted.
const SHOWN: usize = 16;

/// The section's body; a note where the run has no per-iteration samples to analyse.
pub fn section(run: &Run) -> String {
    let points: Vec<PointIters> = run
        .points
        .iter()
        .map(|p| PointIters {
            world: p.record.key.world,
            iters: &p.samples,
            launch_ranks: &[],
            nodes: &[],
        })
        .collect();
    let s = analyze(&points, &run.meta.rank_nodes);
    if s.points == 0 {
        return note("No point of 2 or more ranks has per-iteration samples: nothing to analyse.");
    }
    body(&s, &run.meta.hosts, &run.meta.rank_nodes)
}

fn note(msg: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", esc(msg))
}

fn body(s: &Stragglers, hosts: &[String], rank_nodes: &[usize]) -> String {
    let mut out = note(&format!(
        "{} iterations of {} points of 2 or more ranks. A rank is slowest by chance in 1/p of a \
         point's iterations; persistent: slowest in more than halfway between chance and every \
         iteration; spike: an iteration over {SPIKE}x its point's median ({} here).",
        s.iterations, s.points, s.spikes
    ));
    if let Some((median, largest)) = s.first_iteration {
        out.push_str(&note(&format!(
            "First timed iteration against the median of the rest: {}x in the median point, \
             {}x at most.",
            fixed(median, 2),
            fixed(largest, 2)
        )));
    }
    let host = |node: usize| hosts.get(node).cloned().unwrap_or_else(|| "-".into());
    let rank_host = |r: usize| host(rank_nodes.get(r).copied().unwrap_or(0));
    out.push_str("<h3>Ranks</h3>\n");
    out.push_str(&rows(&s.ranks, "rank", &rank_host));
    if !s.nodes.is_empty() {
        out.push_str("<h3>Nodes</h3>\n");
        out.push_str(&rows(&s.nodes, "node", &host));
    }
    out
}

fn rows(list: &[Straggler], what: &str, host: &dyn Fn(usize) -> String) -> String {
    let head = [
        what,
        "host",
        "slowest in",
        "share",
        "by chance",
        "median excess when slowest",
        "spikes",
        "pattern",
    ];
    let shown: Vec<(Vec<Cell>, Option<&str>)> = list
        .iter()
        .take(SHOWN)
        .map(|s| (row(s, host), s.persistent.then_some("fail")))
        .collect();
    let mut out = table(&head, &shown);
    if list.len() > SHOWN {
        out.push_str(&note(&format!("and {} more", list.len() - SHOWN)));
    }
    out
}

fn row(s: &Straggler, host: &dyn Fn(usize) -> String) -> Vec<Cell> {
    let share = |n: f64| if s.of > 0 { n / s.of as f64 } else { f64::NAN };
    let pattern = match (s.persistent, s.spikes > 0) {
        (true, _) => "persistent",
        (false, true) => "spikes",
        (false, false) => "-",
    };
    vec![
        num(s.id.to_string()),
        text(host(s.id)),
        num(format!("{} of {}", s.slowest, s.of)),
        num(pct(share(s.slowest as f64))),
        num(pct(share(s.expected))),
        num(pct(s.excess_median)),
        num(s.spikes.to_string()),
        text(pattern),
    ]
}
