//! What a log says about one run, before it becomes a results folder: the tool-neutral
//! vocabulary shared by the nccl-tests and OSU readers. No I/O.

use std::collections::BTreeMap;

/// The tool that wrote a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    NcclTests,
    Osu,
}

impl Tool {
    /// The name in meta.json's `import.tool`.
    pub fn name(self) -> &'static str {
        match self {
            Tool::NcclTests => "nccl-tests",
            Tool::Osu => "osu",
        }
    }
}

/// One rank of a nccl-tests rank list (`#  Rank  0 Group  0 Pid 1234 on host device  0 [0x1b]
/// NVIDIA H100 80GB HBM3`).
#[derive(Clone, Debug, PartialEq)]
pub struct RankLine {
    pub rank: usize,
    pub host: String,
    pub pid: Option<u64>,
    pub device: Option<u32>,
    /// The GPU's name, as the driver gives it.
    pub gpu: String,
}

/// One half of a table row: the out-of-place or the in-place measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Half {
    /// The average time of one call, in µs (the only time nccl-tests prints).
    pub time_us: f64,
    /// OSU `-f`: the fastest and slowest rank's average.
    pub min_us: Option<f64>,
    pub max_us: Option<f64>,
    /// The log's own bandwidths (GB/s) as printed, where it prints them.
    pub algbw_gbps: Option<f64>,
    pub busbw_gbps: Option<f64>,
    /// Wrong elements (`#wrong`); `None` when the log does not say (validation off, an old
    /// release's float `error`).
    pub wrong: Option<u64>,
    /// An old release's `error` column (largest deviation), as printed.
    pub error: Option<f64>,
    /// Iterations averaged, where the row says (OSU `-f`).
    pub iters: Option<usize>,
    /// The step of the time's last printed digit (µs; for the bandwidth cross-check).
    pub time_step_us: f64,
    /// Per-iteration times where the log has them (nccl-tests `-I 1`, its JSON's
    /// `*_per_iter.times_us`), each with the slowest and fastest process where it lists them.
    pub samples: Vec<crate::model::record::IterSample>,
    /// nccl-tests `-I 1`'s printed per-iteration spread (`i_min i_max i_p99 i_cv%`).
    pub spread: Option<PrintedSpread>,
}

/// The per-iteration spread a table prints beside a half (nccl-tests `-I 1`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrintedSpread {
    pub min_us: f64,
    pub max_us: f64,
    pub p99_us: f64,
    /// Coefficient of variation as a fraction (the table prints a percentage).
    pub cv: f64,
}

/// One row of a table: one message size.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The size as the log prints it, in bytes.
    pub bytes: u64,
    /// Elements, as the log prints them (nccl-tests); `None` for OSU.
    pub count: Option<u64>,
    /// The element type and reduction, as printed (`float`, `sum`); nccl-tests `-d all -o all`
    /// puts several in one table.
    pub type_name: String,
    pub redop_name: String,
    /// The `root` column's value, where the table has one.
    pub root: Option<i64>,
    pub out_of_place: Option<Half>,
    pub in_place: Option<Half>,
    /// 1-based line of the row in its file.
    pub line: usize,
}

/// One run of a test, as read from a log.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct LogRun {
    /// The test binary (`all_reduce_perf`, `osu_allreduce`); `None` when the log does not say.
    pub test: Option<String>,
    /// The tool's version, where the log prints it.
    pub tool_version: Option<String>,
    /// The collective library's version (`nccl-library=21903` → `NCCL 2.19.3`).
    pub library: Option<String>,
    /// `key: value` settings of the header (`nThread`, `nGpus`, `iters`, ...), as printed.
    pub header: BTreeMap<String, String>,
    pub ranks: Vec<RankLine>,
    pub rows: Vec<Row>,
    /// 1-based first and last line of the run in its file.
    pub first_line: usize,
    pub last_line: usize,
    /// The log ended inside the table (no footer): the rows read are complete, more were cut.
    pub truncated: bool,
    /// `NCCL_ALGO` / `NCCL_PROTO` as NCCL's INFO lines report them (`NCCL_ALGO set by
    /// environment to Ring`).
    pub env_algo: Option<String>,
    pub env_proto: Option<String>,
    /// Lines inside the run that were not the tool's (NCCL INFO, stray stderr), counted.
    pub foreign_lines: usize,
}

impl LogRun {
    /// A header setting parsed as a number.
    pub fn header_number(&self, key: &str) -> Option<u64> {
        self.header.get(key)?.parse().ok()
    }
}
