//! meta.json `bisect`: what `collbench sweep --bisect` measured in each round and whom it
//! named (docs/FORMATS.md).

use serde::{Deserialize, Serialize};

/// The rounds of a bisection and its verdict.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BisectSummary {
    /// `slow-node`, `slow-link`, `none-stands-out`, or `unfinished` (the run ended first).
    pub verdict: String,
    /// The node named (one) or the link's two nodes; empty otherwise. Indices into `hosts`.
    pub nodes: Vec<usize>,
    /// Their host names.
    pub hosts: Vec<String>,
    /// The slower side's busbw over the faster side's in the deciding round.
    pub ratio: Option<f64>,
    pub rounds: Vec<BisectRound>,
}

/// One round: the node groups measured, their busbw, and their rows of summary.csv.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BisectRound {
    pub groups: Vec<Vec<usize>>,
    pub busbw_gbps: Vec<f64>,
    pub points: Vec<usize>,
}
