//! `collbench import`: the logs clusters already have, as results folders every other command
//! reads.
//!
//! ```text
//! files ──► lines (launcher prefixes, library lines) ──► nccl_text | nccl_json | osu
//!       ──► log::LogRun (what the log says, tool-neutral)
//!       ──► convert (op, world, nodes, GPUs; one point per table half; bandwidth check)
//!       ──► command (one results folder per run: meta.json with `import`, summary.csv,
//!           samples.csv and ranks.csv without rows)
//! ```
//!
//! An imported point has one time, the tool's average per call: summary.csv's quantile and
//! spread columns stay empty, and `fit` weighs each size as one observation
//! (docs/FORMATS.md "Imported folders", docs/METHODOLOGY.md).

pub mod args;
pub mod bwcheck;
pub mod command;
pub mod convert;
pub mod files;
pub mod infer;
mod info;
pub mod inspector;
mod inspector_convert;
mod inspector_run;
pub mod lines;
pub mod log;
pub mod names;
pub mod nccl_json;
pub mod nccl_text;
pub mod osu;
pub mod publish;
pub mod request;
mod write;

/// Where and why a log stopped making sense.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    /// 1-based line.
    pub line: usize,
    pub msg: String,
}
