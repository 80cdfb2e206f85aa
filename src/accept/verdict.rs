//! The outcome of `collbench accept`: verdict.json (schema `collbench.verdict/v1`, described in
//! docs/FORMATS.md) and the exit code it implies.

use serde::Serialize;

use super::reason::{Culprit, Reason, ReasonCount};
use super::stragglers::RunStragglers;
use super::thresholds::Check;
use crate::meta::failure::Failure;

/// Schema id of verdict.json.
pub const VERDICT_SCHEMA: &str = "collbench.verdict/v1";

/// File name of the verdict inside the output folder.
pub const VERDICT_FILE: &str = "verdict.json";

/// Pass, fail, or could not be judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    /// Nothing was measured to judge (no point matched, a value was not defined, a run did
    /// not complete).
    NoData,
}

impl Outcome {
    /// As printed in the table.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "FAIL",
            Outcome::NoData => "NO DATA",
        }
    }

    /// The combined outcome of parts: no data dominates (the verdict is incomplete), then fail.
    pub fn combine(parts: impl IntoIterator<Item = Outcome>) -> Outcome {
        parts.into_iter().max().unwrap_or(Outcome::Pass)
    }
}

/// The whole verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub schema: String,
    pub collbench_version: String,
    pub created: String,
    pub criteria_file: String,
    /// The criteria's `name`.
    pub name: String,
    pub command_line: Vec<String>,
    /// The results folders judged, in repeat order.
    pub runs: Vec<RunView>,
    pub repeats: usize,
    pub result: Outcome,
    /// 0 pass, 1 fail, 2 could not judge.
    pub exit_code: u8,
    pub counts: Counts,
    pub criteria: Vec<CriterionVerdict>,
    /// Every reason code of a failed or unjudged check or folder, with counts and the ranks
    /// and nodes named: what a machine routes on.
    pub reasons: Vec<ReasonCount>,
    /// Per results folder with per-iteration samples, its stragglers over time.
    pub stragglers: Vec<RunStragglers>,
    /// What the reader should know (incomplete runs, one-node skew, ...).
    pub notes: Vec<String>,
}

/// A judged results folder.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunView {
    pub path: String,
    /// meta.json's status: complete, failed, interrupted, running.
    pub status: String,
    /// meta.json's error: why it did not complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// meta.json's failure: a hang or a missing rank, and the rank (read from `error` for
    /// folders written before meta.json had it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

/// How many of each outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub criteria: usize,
    pub criteria_failed: usize,
    pub criteria_no_data: usize,
    pub checks: usize,
    pub checks_failed: usize,
    pub checks_no_data: usize,
}

/// One criterion and its points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CriterionVerdict {
    pub name: String,
    /// The selector in words.
    pub selector: String,
    /// The statistic across repeats.
    pub stat: String,
    pub result: Outcome,
    pub points: Vec<PointVerdict>,
    /// Why there is no point (when none matched).
    pub note: Option<String>,
}

/// One matched point (all its repeats) and its checks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointVerdict {
    pub label: String,
    pub op: String,
    pub algo: String,
    /// The NCCL protocol; absent for backends without protocols.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proto: Option<String>,
    pub dtype: String,
    pub world: usize,
    pub nodes: usize,
    pub bytes: usize,
    pub in_place: bool,
    /// Repeats that measured this point.
    pub repeats: usize,
    pub result: Outcome,
    pub checks: Vec<CheckVerdict>,
    /// The rank that was slowest most often (from ranks.csv).
    pub slow_rank: Option<Slow>,
    /// The node that was slowest most often, when the point spans nodes.
    pub slow_node: Option<Slow>,
}

/// One threshold at one point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckVerdict {
    /// The threshold's key, e.g. `min_busbw_gbps`.
    pub check: String,
    pub unit: String,
    /// The judged quantity in each repeat that defined it, in repeat order.
    pub values: Vec<f64>,
    /// The statistic of `values` (the sum for `max_wrong`); null without data.
    pub measured: Option<f64>,
    pub threshold: f64,
    /// Headroom in percent of the threshold, negative when failing; null for a zero threshold.
    pub margin_pct: Option<f64>,
    /// The reference fit's time for the point (fit checks only), µs.
    pub predicted_us: Option<f64>,
    pub result: Outcome,
    /// Why it failed or could not be judged; null for a pass.
    pub reason: Option<Reason>,
    /// The rank or node the reason names (rank-straggler, node-slow); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub culprit: Option<Culprit>,
    pub note: Option<String>,
}

/// A slow rank or node.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Slow {
    /// Rank within the group, or node index (into meta.json's `hosts`).
    pub id: usize,
    /// The rank's rank in the launch (ranks only).
    pub global_rank: Option<usize>,
    /// Host name of the rank's or node's host, when meta.json names it.
    pub host: Option<String>,
    /// Median over repeats of how much slower it was than the fastest, percent.
    pub excess_pct: f64,
    /// Repeats in which it was the slowest, of `repeats`.
    pub slowest_in: usize,
    pub repeats: usize,
}

impl Slow {
    /// E.g. `slowest rank 1 +12.0% (3/3 repeats)`, with the launch rank and host where they
    /// say more: `slowest rank 1 (rank 9 of the launch, on node-b) ...`.
    pub fn describe(&self, what: &str, with_host: bool) -> String {
        let mut whose: Vec<String> = Vec::new();
        if let Some(g) = self.global_rank.filter(|&g| g != self.id) {
            whose.push(format!("rank {g} of the launch"));
        }
        if let Some(h) = self.host.as_ref().filter(|_| with_host) {
            whose.push(format!("on {h}"));
        }
        let whose = if whose.is_empty() {
            String::new()
        } else {
            format!(" ({})", whose.join(", "))
        };
        format!(
            "slowest {what} {}{whose} +{:.1}% ({}/{} repeats)",
            self.id, self.excess_pct, self.slowest_in, self.repeats
        )
    }
}

impl Slow {
    /// As the rank or node a reason names.
    fn culprit(&self, kind: &'static str) -> Culprit {
        Culprit {
            kind,
            id: self.id,
            global_rank: self.global_rank,
            host: self.host.clone(),
        }
    }
}

impl Outcome {
    /// The reason code of a check's outcome: none for a pass.
    pub fn reason(self, check: Check) -> Option<Reason> {
        match self {
            Outcome::Pass => None,
            Outcome::Fail => Some(Reason::of_check(check)),
            Outcome::NoData => Some(Reason::NoData),
        }
    }
}

/// What a failed skew check names: the slowest rank, or the slowest node (a one-node point's
/// node skew is judged per rank, so it names the rank).
pub fn culprit(reason: Reason, p: &PointVerdict) -> Option<Culprit> {
    match reason {
        Reason::RankStraggler => p.slow_rank.as_ref().map(|s| s.culprit("rank")),
        Reason::NodeSlow => match &p.slow_node {
            Some(s) => Some(s.culprit("node")),
            None => p.slow_rank.as_ref().map(|s| s.culprit("rank")),
        },
        _ => None,
    }
}

/// Every code of the verdict, in the order of [`Reason::ALL`].
pub fn tally(criteria: &[CriterionVerdict], runs: &[RunView]) -> Vec<ReasonCount> {
    let mut out: Vec<ReasonCount> = Vec::new();
    let mut add = |code: Reason, criterion: Option<&str>, name: Option<String>| {
        let i = match out.iter().position(|r| r.code == code) {
            Some(i) => i,
            None => {
                out.push(ReasonCount {
                    code,
                    count: 0,
                    criteria: Vec::new(),
                    names: Vec::new(),
                });
                out.len() - 1
            }
        };
        let r = &mut out[i];
        r.count += 1;
        if let Some(c) = criterion.filter(|c| !r.criteria.iter().any(|x| x == c)) {
            r.criteria.push(c.to_string());
        }
        if let Some(n) = name.filter(|n| !r.names.contains(n)) {
            r.names.push(n);
        }
    };
    for cv in criteria {
        if cv.points.is_empty() && cv.result == Outcome::NoData {
            add(Reason::NoData, Some(&cv.name), None);
        }
        for chk in cv.points.iter().flat_map(|p| &p.checks) {
            if let Some(code) = chk.reason {
                let name = chk.culprit.as_ref().map(Culprit::describe);
                add(code, Some(&cv.name), name);
            }
        }
    }
    for r in runs.iter().filter(|r| r.status != "complete") {
        add(Reason::RunIncomplete, None, Some(r.path.clone()));
        let cause = super::run_cause::of_run(r.failure.as_ref());
        if let Some((code, rank)) = cause {
            let name = rank.map_or(r.path.clone(), |k| format!("{k} in {}", r.path));
            add(code, None, Some(name));
        }
    }
    out.sort_by_key(|r| r.code);
    out
}

impl PointVerdict {
    /// The slow rank and node, as text for a failing row.
    pub fn blame(&self) -> Option<String> {
        let hosts = self.nodes > 1;
        let parts: Vec<String> = [
            self.slow_node.as_ref().map(|s| s.describe("node", hosts)),
            self.slow_rank.as_ref().map(|s| s.describe("rank", hosts)),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Counts and overall result of judged criteria.
pub fn totals(criteria: &[CriterionVerdict], runs_complete: bool) -> (Counts, Outcome) {
    let mut c = Counts {
        criteria: criteria.len(),
        ..Counts::default()
    };
    for cv in criteria {
        match cv.result {
            Outcome::Fail => c.criteria_failed += 1,
            Outcome::NoData => c.criteria_no_data += 1,
            Outcome::Pass => {}
        }
        for chk in cv.points.iter().flat_map(|p| &p.checks) {
            c.checks += 1;
            match chk.result {
                Outcome::Fail => c.checks_failed += 1,
                Outcome::NoData => c.checks_no_data += 1,
                Outcome::Pass => {}
            }
        }
    }
    let mut result = Outcome::combine(criteria.iter().map(|cv| cv.result));
    if !runs_complete {
        result = Outcome::NoData;
    }
    (c, result)
}

/// The exit code of an outcome: 0 pass, 1 fail, 2 could not judge.
pub fn exit_code(result: Outcome) -> u8 {
    match result {
        Outcome::Pass => 0,
        Outcome::Fail => 1,
        Outcome::NoData => 2,
    }
}
