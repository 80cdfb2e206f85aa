//! The files a sweep writes besides its results folder, checked before anything runs:
//! nccl-tests' `-J` JSON (a new file) and the Prometheus metrics (a file replaced as points
//! arrive, as a node exporter's textfile collector reads one), and where the outputs sit
//! (`--in-place`).

use std::path::Path;

use super::{parse_in_place, Error, Result};
use crate::sweep::console::TableFormat;

/// `--json-out` names a new file in a folder that exists: refused before anything runs.
pub(super) fn check_json_out(path: &Path) -> Result<()> {
    let folder = path.parent().filter(|f| !f.as_os_str().is_empty());
    let why = if path.symlink_metadata().is_ok() {
        "already there; give the path of a new file"
    } else if folder.is_some_and(|f| !f.is_dir()) {
        "its folder does not exist; create it first"
    } else {
        return Ok(());
    };
    Err(Error::usage(format!(
        "--json-out {}: {why}",
        path.display()
    )))
}

/// `--metrics` names a file (new, or one this flag wrote before: it is replaced whole) in a
/// folder that exists, and not a folder.
pub(super) fn check_metrics(path: &Path) -> Result<()> {
    let folder = path.parent().filter(|f| !f.as_os_str().is_empty());
    let why = if path.is_dir() {
        "is a folder; give the path of a file"
    } else if folder.is_some_and(|f| !f.is_dir()) {
        "its folder does not exist; create it first"
    } else {
        return Ok(());
    };
    Err(Error::usage(format!("--metrics {}: {why}", path.display())))
}

impl super::SweepArgs {
    /// `--in-place`: off by default; nccl-tests' table holds both halves of every size, so
    /// with `--format nccl-tests` both, and only both (with `--json-out`, both by default).
    pub(super) fn placements(&self) -> Result<Vec<bool>> {
        match (self.format, self.in_place.as_deref()) {
            // nccl-tests' JSON has both halves too.
            (TableFormat::Collbench, None) if self.json_out.is_some() => parse_in_place("both"),
            (TableFormat::Collbench, text) => parse_in_place(text.unwrap_or("off")),
            (TableFormat::NcclTests, None) => parse_in_place("both"),
            (TableFormat::NcclTests, Some(text)) => match parse_in_place(text)?.len() {
                2 => parse_in_place(text),
                _ => Err(Error::usage(format!(
                    "--in-place {text} with --format nccl-tests: its table holds both halves of \
                     every size; drop --in-place"
                ))),
            },
        }
    }
}
