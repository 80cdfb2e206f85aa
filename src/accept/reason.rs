//! Why a check failed or could not be judged, as a stable code a machine can route on
//! (verdict.json's `reason` and `reasons`, JUnit's failure `type`, the table's note), with the
//! rank or node it names where the check is about one.

use serde::Serialize;

use super::thresholds::Check;
use crate::named::named_enum;

named_enum!(
    /// A reason code (docs/FORMATS.md, "verdict.json": the table of codes).
    Reason, "reason code", {
        /// Bus bandwidth below `min_busbw_gbps`.
        BandwidthLow => "bandwidth-low",
        /// Time above `max_time_us`.
        LatencyHigh => "latency-high",
        /// Variation across iterations above `max_cv`.
        Unstable => "unstable",
        /// One rank slower than the others by more than `max_rank_skew`; names the rank.
        RankStraggler => "rank-straggler",
        /// One node slower than the others by more than `max_node_skew`, or slowest more often
        /// than `max_node_slowest_bias` allows; names the node.
        NodeSlow => "node-slow",
        /// Time further from the reference fit than `max_fit_deviation`, either way.
        OffModel => "off-model",
        /// Time slower than the reference fit by more than `max_fit_slowdown`.
        SlowerThanModel => "slower-than-model",
        /// More wrong elements than `max_wrong`.
        WrongResults => "wrong-results",
        /// Nothing measured to judge (no point matched, a value not defined).
        NoData => "no-data",
        /// A results folder did not complete (meta.json's status), so the verdict cannot be.
        RunIncomplete => "run-incomplete",
        /// Slower at the end of a soak's cycles (or of the repeats) than `max_drift` allows.
        Drift => "drift",
        /// A run ended because a rank stopped making progress; names the rank.
        Hang => "hang",
        /// A run ended because a rank died, was killed or ended early; names the rank.
        RankMissing => "rank-missing",
    }
);

impl Reason {
    /// The code of a threshold that was not met.
    pub fn of_check(check: Check) -> Reason {
        match check {
            Check::MinBusbw(_) => Reason::BandwidthLow,
            Check::MaxTime(_) => Reason::LatencyHigh,
            Check::MaxCv(_) => Reason::Unstable,
            Check::MaxRankSkew(_) | Check::MaxSlowestBias(_) => Reason::RankStraggler,
            Check::MaxNodeSkew(_) | Check::MaxNodeSlowestBias(_) => Reason::NodeSlow,
            Check::MaxDrift(_) => Reason::Drift,
            Check::MaxFitDeviation(_) => Reason::OffModel,
            Check::MaxFitSlowdown(_) => Reason::SlowerThanModel,
            Check::MaxWrong(_) => Reason::WrongResults,
        }
    }
}

/// The rank or node a reason names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Culprit {
    /// `rank` (its index in the point's group) or `node` (an index into meta.json's `hosts`).
    pub kind: &'static str,
    pub id: usize,
    /// The rank's rank in the launch (ranks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_rank: Option<usize>,
    /// The host of the rank or node, where meta.json names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl Culprit {
    /// `rank 3`, `node 1 (node-b)`.
    pub fn describe(&self) -> String {
        match &self.host {
            Some(h) => format!("{} {} ({h})", self.kind, self.id),
            None => format!("{} {}", self.kind, self.id),
        }
    }
}

/// One code of the verdict: how many checks gave it, in which criteria, naming whom.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReasonCount {
    pub code: Reason,
    /// Checks (or, for `run-incomplete`, results folders; for a criterion that matched no
    /// point, that criterion) with this code.
    pub count: usize,
    pub criteria: Vec<String>,
    /// The ranks and nodes named, each once (`rank 3`, `node 1 (node-b)`); for
    /// `run-incomplete`, the folders that did not complete.
    pub names: Vec<String>,
}
