//! Run metadata (`meta.json`): what ran, where, with which options, and how it ended.
//!
//! meta.json is written when a run starts (status `running`) and rewritten when it ends, so a
//! folder whose meta.json still says `running` belongs to a run that is going on or was killed.
//! The format is described in docs/FORMATS.md.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::call::BackendKind;
use crate::model::plan::LoopTiming;
use crate::stats::LoopRank;

/// Schema id of meta.json.
pub const META_SCHEMA: &str = "collbench.meta/v1";

/// File name of the metadata inside a results folder.
pub const META_FILE: &str = "meta.json";

mod bisect;
pub use bisect::{BisectRound, BisectSummary};
pub mod failure;
use failure::Failure;
mod host;
pub use host::{mem_available_bytes, HostInfo};

/// How a run ended (or that it has not yet).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Started and not finished; after the fact this means the process was killed.
    Running,
    /// Every planned point was measured.
    Complete,
    /// Stopped by an error; `error` says which.
    Failed,
    /// Stopped by Ctrl-C or SIGTERM.
    Interrupted,
}

/// The contents of meta.json.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Meta {
    /// Always [`META_SCHEMA`].
    pub schema: String,
    /// Version of the collbench that wrote the folder.
    pub collbench_version: String,
    /// The program's arguments, program name first.
    pub command_line: Vec<String>,
    /// The launching host.
    pub host: HostInfo,
    /// Backend name (`host`, `mpi`, `nccl`).
    pub backend: String,
    /// Transport between ranks, e.g. `shm` or `tcp`.
    pub transport: String,
    /// Rank processes launched.
    pub ranks: usize,
    /// Hosts the ranks span.
    pub nodes: usize,
    /// Host name of every node, in node order (node 0 holds rank 0).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Node index of every rank, in rank order (an index into `hosts`).
    #[serde(default)]
    pub rank_nodes: Vec<usize>,
    /// The resolved sweep options, as the caller gave them.
    pub options: serde_json::Value,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// End time, RFC 3339 UTC; `None` while running.
    pub ended: Option<String>,
    /// How the run ended.
    pub status: RunStatus,
    /// The error that stopped a failed or interrupted run.
    pub error: Option<String>,
    /// What `error` means where it is a hang or a missing rank: the cause and the rank named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Points measured (rows of summary.csv); filled in when the run ends.
    pub points: usize,
    /// Files of the folder, name -> schema id.
    pub files: BTreeMap<String, String>,
    /// The collective library and its version where a backend uses one (mpi: the MPI
    /// library's version string); absent for the host backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// The GPU of every rank, in rank order (nccl backend: the driver's device name); absent
    /// for backends that run on CPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<String>,
    /// Where an imported folder's points came from (`collbench import`); absent for runs
    /// collbench measured itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub import: Option<ImportInfo>,
    /// How the times of summary.csv were taken; absent for imported folders (their
    /// `import.time_statistic` says) and for folders written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
    /// What `sweep --bisect` found; absent for other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisect: Option<BisectSummary>,
}

/// The two timings of every measured point (docs/METHODOLOGY.md "Two timings").
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// What the `time_us_*` columns and samples.csv hold.
    pub samples: String,
    /// What `loop_time_us` holds.
    #[serde(rename = "loop")]
    pub loop_: String,
}

impl Timing {
    /// The methods of `backend` (the name meta.json records), with nccl-tests' `-m`, `-z` and
    /// `-a` of its loop as `loop_timing` sets them.
    pub fn measured(backend: &str, loop_timing: LoopTiming) -> Timing {
        let samples = match backend.parse() {
            Ok(BackendKind::Nccl) => {
                "a pair of CUDA events around each timed call on the rank's stream, the calls \
                 enqueued back to back; per iteration the slowest rank's time (per-rank times \
                 in ranks.csv)"
            }
            _ => {
                "each timed call after a barrier of the point's ranks; per iteration the \
                 slowest rank's time (per-rank times in ranks.csv)"
            }
        };
        let LoopTiming {
            agg,
            blocking,
            rank,
        } = loop_timing;
        let calls = match agg {
            1 => "the iteration count of calls".to_string(),
            n => format!("the iteration count of {n} calls (nccl-tests -m {n})"),
        };
        let waits = match (blocking, backend.parse()) {
            (true, Ok(BackendKind::Nccl)) => {
                ", each iteration waited for before the next (nccl-tests -z 1)"
            }
            _ => "",
        };
        let which = match rank {
            LoopRank::Rank0 => "rank 0's (nccl-tests -a 0)",
            LoopRank::Avg => "the mean over ranks (nccl-tests -a 1)",
            LoopRank::Min => "the smallest over ranks (nccl-tests -a 2)",
            LoopRank::Max => "the largest over ranks (nccl-tests -a 3)",
        };
        let samples = match agg {
            1 => samples.to_string(),
            n => format!("{samples}; each sample {n} calls back to back, divided by {n}"),
        };
        Timing {
            samples,
            loop_: format!(
                "nccl-tests' loop: after one barrier {calls} back to back{waits}, each rank's \
                 wall clock from the first call to the completion of the last divided by the \
                 calls; {which}"
            ),
        }
    }
}

/// The loop timing a run's options hold (`loop_timing`), or nccl-tests' defaults.
fn loop_timing_of(options: &serde_json::Value) -> LoopTiming {
    let given = options.get("loop_timing").cloned();
    given
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The source of an imported results folder: another tool's log, and what that log does not
/// hold (docs/FORMATS.md "Imported folders").
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ImportInfo {
    /// `nccl-tests` or `osu`.
    pub tool: String,
    /// The tool's version, where the log prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_version: Option<String>,
    /// The test binary (`all_reduce_perf`, `osu_allreduce`).
    pub test: String,
    /// The log file, as given to `collbench import`.
    pub source: String,
    /// First and last line of the run in that file (1-based).
    pub lines: [usize; 2],
    /// Always false for the tools imported so far: their logs hold one average per size,
    /// samples.csv and ranks.csv have no rows, and the spread columns of summary.csv are empty.
    pub per_iteration_samples: bool,
    /// What `time_us_mean` is, in the tool's words.
    pub time_statistic: String,
    /// Where `algo` and `proto` came from: `log` (NCCL_ALGO/NCCL_PROTO lines), `flag`
    /// (`--algo`/`--proto`) or `unknown` (recorded as `auto`).
    pub algo_from: String,
    /// The header settings of the log (`nThread`, `iters`, ...), as printed.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// The root of rooted collectives (`root` column), where the log has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<i64>,
    /// Whether the log checked results: false where `#wrong` is `N/A` (validation off; `wrong`
    /// is then 0 without meaning). Old releases print the largest deviation instead of a count:
    /// `max_error` holds the largest, and `wrong` is 1 where it exceeds nccl-tests' tolerance.
    pub checked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error: Option<f64>,
    /// Rows whose printed algbw or busbw differs from bytes/time (× the busbw factor) by more
    /// than the log's rounding.
    pub bandwidth_mismatches: usize,
    /// The log ended inside this run's table: the complete rows were kept.
    pub truncated: bool,
    /// What else the import noticed (rows skipped and why, lines not the tool's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Meta {
    /// Metadata for a run starting now, with status `running`.
    pub fn new(
        command_line: Vec<String>,
        backend: &str,
        transport: &str,
        ranks: usize,
        nodes: usize,
        options: serde_json::Value,
    ) -> Meta {
        let host = HostInfo::detect();
        let timing = Timing::measured(backend, loop_timing_of(&options));
        Meta {
            schema: META_SCHEMA.to_string(),
            collbench_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line,
            hosts: vec![host.hostname.clone()],
            rank_nodes: vec![0; ranks],
            host,
            backend: backend.to_string(),
            transport: transport.to_string(),
            ranks,
            nodes,
            options,
            started: now_rfc3339(),
            ended: None,
            status: RunStatus::Running,
            error: None,
            failure: None,
            points: 0,
            files: BTreeMap::new(),
            library: None,
            gpus: Vec::new(),
            import: None,
            timing: Some(timing),
            bisect: None,
        }
    }

    /// Writes `dir/meta.json`. Written to a temporary file and renamed so that a reader (or a
    /// crash) never sees half a file.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(META_FILE);
        let mut text = serde_json::to_string_pretty(self).map_err(|e| Error::Input {
            path: path.clone(),
            msg: format!("cannot encode metadata: {e}"),
        })?;
        text.push('\n');
        match crate::output::file::write_atomic(&path, text.as_bytes()) {
            Ok(()) => Ok(()),
            // A full disk has no room for a second copy, but the blocks of the old file may
            // hold the new one: a run that ends on a full disk still records how it ended.
            Err(e) => overwrite_in_place(&path, text.as_bytes()).map_err(|_| e),
        }
    }

    /// Reads a meta.json, refusing other schemas. Errors name the file.
    pub fn read(path: &Path) -> Result<Meta> {
        let bad = |msg: String| Error::Input {
            path: path.to_path_buf(),
            msg,
        };
        let text =
            crate::input::read_text_capped(path, crate::input::MAX_DOCUMENT_BYTES, "meta.json")?;
        // Check the schema before the fields, so another version says so instead of reporting
        // some field it does not have.
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(META_SCHEMA) => {}
            Some(other) => return Err(bad(format!("schema '{other}', expected '{META_SCHEMA}'"))),
            None => {
                return Err(bad(format!(
                    "no \"schema\" field; not a {META_SCHEMA} file"
                )))
            }
        }
        serde_json::from_value(value).map_err(|e| bad(format!("invalid {META_SCHEMA}: {e}")))
    }

    /// Records the end of the run: its status, the error if any, and the time.
    pub fn finish(&mut self, status: RunStatus, error: Option<String>) {
        self.status = status;
        self.failure = error.as_deref().and_then(failure::of_error);
        self.error = error;
        self.ended = Some(now_rfc3339());
    }
}

/// The current time as RFC 3339 UTC with whole seconds, e.g. `2026-11-22T08:15:00Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Overwrites `path` with `bytes` without allocating: only when they fit in the blocks the
/// file already has (4 KiB granules), so that the write cannot stop halfway for lack of space.
fn overwrite_in_place(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let old = fs::metadata(path)?.len();
    if bytes.len() as u64 > old.div_ceil(4096) * 4096 {
        return Err(std::io::Error::other("no room in the file's blocks"));
    }
    let mut f = fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(bytes)?;
    f.set_len(bytes.len() as u64)?;
    f.sync_all()
}

#[cfg(test)]
mod tests;
