//! A typed `collbench import`, as its flags parse ([`super::args`]).

use std::path::PathBuf;

use super::convert::Overrides;
use super::log::Tool;

/// What the files are: a tool's logs, each run on its own, or NCCL Inspector's per-process
/// logs, read together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Log(Tool),
    Inspector,
}

/// A typed `collbench import`.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub source: Source,
    /// Files and folders, as given.
    pub logs: Vec<PathBuf>,
    /// The results folder (one run) or the folder to put one folder per run in (several).
    pub out: Option<PathBuf>,
    pub overrides: Overrides,
    pub command_line: Vec<String>,
}
