//! `summary.csv`: one row per measured point (schema `collbench.summary/v1`).
//!
//! Times are in microseconds and bandwidths in GB/s (1e9 bytes/s); floats are written with full
//! round-trip precision (see [`super::csvio`]), because fixed decimals lose sub-microsecond
//! latencies and the tiny bandwidths of small messages.

use std::path::Path;

use super::csvio::{self, push_row, CsvFile, Row};
use super::sink::{FinishedPoint, PointSink};
use crate::collective::{Op, Proto};
use crate::error::Result;
use crate::model::call::Register;
use crate::model::comm_setup::CommSetup;
use crate::model::record::{PointKey, PointRecord};

/// Schema id of summary.csv.
pub const SUMMARY_SCHEMA: &str = "collbench.summary/v1";

/// File name of the summary inside a results folder.
pub const SUMMARY_FILE: &str = "summary.csv";

/// The columns of summary.csv, in order. The last ones were added after the schema first
/// appeared (see [`REQUIRED_COLUMNS`]).
pub const SUMMARY_COLUMNS: [&str; 47] = [
    "backend",
    "op",
    "algo",
    "dtype",
    "redop",
    "world",
    "nodes",
    "bytes",
    "count",
    "in_place",
    "iters",
    "warmup",
    "time_us_mean",
    "time_us_median",
    "time_us_min",
    "time_us_p95",
    "time_us_p99",
    "time_us_max",
    "time_us_stddev",
    "time_cv",
    "time_us_mad",
    "algbw_gbps",
    "busbw_gbps",
    "busbw_gbps_mean",
    "wrong",
    "slowest_rank",
    "skew_us_median",
    "proto",
    "nccl_estimate_us",
    "root",
    "loop_time_us",
    "loop_algbw_gbps",
    "loop_busbw_gbps",
    "nccl_call",
    "nccl_algo",
    "nccl_proto",
    "nccl_register",
    "nccl_cta_policy",
    "nccl_ctas",
    "cycle",
    "ended_utc",
    "traffic",
    "group",
    "concurrent",
    "slowdown",
    "aggregate_busbw_gbps",
    "compute_slowdown",
];

/// The columns every summary.csv has; `proto`, `nccl_estimate_us`, `root`, the `loop_` columns
/// and the `nccl_` columns may be absent from files written before them.
const REQUIRED_COLUMNS: usize = 27;

/// What errors call a file that should be a summary.
const WHAT: &str = "collbench summary.csv (collbench.summary/v1)";

/// Appends points to summary.csv.
#[derive(Debug)]
pub struct SummaryWriter {
    csv: CsvFile,
}

impl SummaryWriter {
    /// Creates `dir/summary.csv` with its header; refuses an existing one.
    pub fn create(dir: &Path) -> Result<Self> {
        let csv = CsvFile::create(dir, SUMMARY_FILE, &SUMMARY_COLUMNS)?;
        Ok(SummaryWriter { csv })
    }

    /// Appends one row. When this returns, the row is in the kernel: a crash of this process
    /// does not lose it.
    pub fn append(&mut self, rec: &PointRecord) -> Result<()> {
        let mut line = String::new();
        push_row(&mut line, &fields(rec)?);
        self.csv.append(&line)
    }

    /// Path of the file.
    pub fn path(&self) -> &Path {
        self.csv.path()
    }
}

impl PointSink for SummaryWriter {
    fn file(&self) -> (&'static str, &'static str) {
        (SUMMARY_FILE, SUMMARY_SCHEMA)
    }

    fn append(&mut self, p: &FinishedPoint<'_>) -> Result<()> {
        SummaryWriter::append(self, p.record)
    }
}

/// The fields of one row, in [`SUMMARY_COLUMNS`] order.
fn fields(rec: &PointRecord) -> Result<Vec<String>> {
    let k = &rec.key;
    let f = csvio::float;
    Ok(vec![
        csvio::text("backend", &k.backend)?,
        k.op.to_string(),
        k.algo.to_string(),
        k.dtype.to_string(),
        k.redop.to_string(),
        k.world.to_string(),
        k.nodes.to_string(),
        k.bytes.to_string(),
        k.count.to_string(),
        csvio::boolean(k.in_place),
        rec.iters.to_string(),
        rec.warmup.to_string(),
        f(rec.time_us_mean),
        f(rec.time_us_median),
        f(rec.time_us_min),
        f(rec.time_us_p95),
        f(rec.time_us_p99),
        f(rec.time_us_max),
        f(rec.time_us_stddev),
        f(rec.time_cv),
        f(rec.time_us_mad),
        f(rec.algbw_gbps),
        f(rec.busbw_gbps),
        f(rec.busbw_gbps_mean),
        rec.wrong.to_string(),
        rec.slowest_rank.to_string(),
        f(rec.skew_us_median),
        rec.key.proto.map_or(String::new(), |p| p.to_string()),
        rec.nccl_estimate_us.map_or(String::new(), f),
        rec.key.root.map_or(String::new(), |r| r.to_string()),
        rec.loop_time_us.map_or(String::new(), f),
        rec.loop_algbw_gbps().map_or(String::new(), f),
        rec.loop_busbw_gbps().map_or(String::new(), f),
        rec.nccl_call.clone().unwrap_or_default(),
        rec.nccl_algo.clone().unwrap_or_default(),
        rec.nccl_proto.clone().unwrap_or_default(),
        optional_field(rec.key.comm.register),
        optional_field(rec.key.comm.cta_policy),
        optional_field(rec.key.comm.ctas),
        rec.cycle.to_string(),
        csvio::text("ended_utc", rec.ended_utc.as_deref().unwrap_or(""))?,
        csvio::text("traffic", rec.key.traffic.as_deref().unwrap_or(""))?,
        csvio::text("group", rec.key.group.as_deref().unwrap_or(""))?,
        csvio::text("concurrent", rec.key.concurrent.as_deref().unwrap_or(""))?,
        rec.slowdown.map_or(String::new(), f),
        rec.aggregate_busbw_gbps.map_or(String::new(), f),
        rec.compute_slowdown.map_or(String::new(), f),
    ])
}

/// An optional value's text; empty for `None`.
fn optional_field<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// Reads a summary.csv back. Errors name the file and line: an empty file, a header without
/// the summary columns, a row cut short, or a value that is not a number are all refused.
pub fn read_summary(path: &Path) -> Result<Vec<PointRecord>> {
    read_summary_until_cut(path).map(|(rows, _)| rows)
}

/// [`read_summary`], also saying whether the last line was cut off (a crash or a full disk
/// while a point was written: its other files may hold rows of that point).
pub fn read_summary_until_cut(path: &Path) -> Result<(Vec<PointRecord>, bool)> {
    let (rows, cut) = csvio::read_rows_until_cut(
        path,
        WHAT,
        &SUMMARY_COLUMNS[..REQUIRED_COLUMNS],
        parse_record,
    )?;
    Ok((rows, cut.is_some()))
}

#[path = "summary_check.rs"]
mod check;

/// The first physically impossible value of a record, as the reader would refuse it (writers
/// that convert other tools' numbers check with this before writing).
pub fn check_point(rec: &PointRecord) -> std::result::Result<(), String> {
    check::check_record(rec)
}

/// One row as a record, refused when a value is physically impossible.
fn parse_record(row: &Row) -> Result<PointRecord> {
    let rec = read_record(row)?;
    check::check_record(&rec).map_err(|m| row.error(m))?;
    Ok(rec)
}

fn read_record(row: &Row) -> Result<PointRecord> {
    Ok(PointRecord {
        key: parse_key(row)?,
        iters: row.parse("iters")?,
        warmup: row.parse("warmup")?,
        time_us_mean: row.float("time_us_mean")?,
        time_us_median: row.float("time_us_median")?,
        time_us_min: row.float("time_us_min")?,
        time_us_p95: row.float("time_us_p95")?,
        time_us_p99: row.float("time_us_p99")?,
        time_us_max: row.float("time_us_max")?,
        time_us_stddev: row.float("time_us_stddev")?,
        time_cv: row.float("time_cv")?,
        time_us_mad: row.float("time_us_mad")?,
        algbw_gbps: row.float("algbw_gbps")?,
        busbw_gbps: row.float("busbw_gbps")?,
        busbw_gbps_mean: row.float("busbw_gbps_mean")?,
        wrong: row.parse("wrong")?,
        slowest_rank: row.parse("slowest_rank")?,
        skew_us_median: row.float("skew_us_median")?,
        nccl_estimate_us: Some(row.float_or("nccl_estimate_us")?).filter(|x| !x.is_nan()),
        loop_time_us: Some(row.float_or("loop_time_us")?).filter(|x| !x.is_nan()),
        nccl_call: optional_text(row, "nccl_call")?,
        nccl_algo: optional_text(row, "nccl_algo")?,
        nccl_proto: optional_text(row, "nccl_proto")?,
        cycle: row.parse_or("cycle", 0)?,
        ended_utc: parse_time(row)?,
        slowdown: Some(row.float_or("slowdown")?).filter(|x| !x.is_nan()),
        aggregate_busbw_gbps: Some(row.float_or("aggregate_busbw_gbps")?).filter(|x| !x.is_nan()),
        compute_slowdown: Some(row.float_or("compute_slowdown")?).filter(|x| !x.is_nan()),
    })
}

/// The `ended_utc` column: an RFC 3339 time, or empty (imports, older files).
fn parse_time(row: &Row) -> Result<Option<String>> {
    let text = optional_text(row, "ended_utc")?;
    if let Some(t) = &text {
        humantime::parse_rfc3339(t).map_err(|e| {
            row.error(format!(
                "column ended_utc: '{t}' is not an RFC 3339 time such as \
                 2026-11-28T05:30:00.125Z: {e}"
            ))
        })?;
    }
    Ok(text)
}

/// A text column added after v1 first appeared: `None` where empty or absent.
fn optional_text(row: &Row, column: &str) -> Result<Option<String>> {
    let text = row.parse_or::<String>(column, String::new())?;
    Ok(Some(text).filter(|t| !t.is_empty()))
}

/// The key columns of a row.
fn parse_key(row: &Row) -> Result<PointKey> {
    let op: Op = row.parse("op")?;
    Ok(PointKey {
        backend: row.get("backend")?.to_string(),
        op,
        algo: row.parse("algo")?,
        dtype: row.parse("dtype")?,
        redop: row.parse("redop")?,
        world: row.parse("world")?,
        nodes: row.parse("nodes")?,
        bytes: row.parse("bytes")?,
        count: row.parse("count")?,
        in_place: row.boolean("in_place")?,
        proto: parse_proto(row)?,
        root: parse_root(row, op)?,
        comm: parse_comm(row)?,
        traffic: optional_text(row, "traffic")?,
        group: optional_text(row, "group")?,
        concurrent: optional_text(row, "concurrent")?,
    })
}

/// The `nccl_register`, `nccl_cta_policy` and `nccl_ctas` columns: empty (or absent, in older
/// files) where the library's default was left alone; `none` registration is the default too.
fn parse_comm(row: &Row) -> Result<CommSetup> {
    let register: Option<Register> = optional_value(row, "nccl_register")?;
    Ok(CommSetup {
        register: register.filter(|r| *r != Register::None),
        cta_policy: optional_value(row, "nccl_cta_policy")?,
        ctas: optional_value(row, "nccl_ctas")?,
    })
}

/// A column added after v1 first appeared holding a named value: `None` where empty or absent.
fn optional_value<T>(row: &Row, column: &str) -> Result<Option<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    match optional_text(row, column)? {
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|e| row.error(format!("column {column}: cannot read '{text}': {e}"))),
        None => Ok(None),
    }
}

/// The `root` column: empty (or absent, in older files) for the ops without a root; a rooted
/// op's point from a file written before the column had root 0, the only root then.
fn parse_root(row: &Row, op: Op) -> Result<Option<usize>> {
    let text: String = row.parse_or("root", String::new())?;
    match (text.is_empty(), op.rooted()) {
        (true, rooted) => Ok(rooted.then_some(0)),
        // The column held text: the default is never used.
        (false, true) => row.parse_or("root", 0).map(Some),
        (false, false) => Err(row.error(format!(
            "column root: {op} has no root, but the row gives '{text}'; leave it empty"
        ))),
    }
}

/// The `proto` column: empty (or absent, in older files) where the backend has no protocols.
fn parse_proto(row: &Row) -> Result<Option<Proto>> {
    let text: String = row.parse_or("proto", String::new())?;
    if text.is_empty() {
        return Ok(None);
    }
    // The column is there (it held text): the default is never used.
    row.parse_or("proto", Proto::Auto).map(Some)
}

#[cfg(test)]
#[path = "summary_csv_tests.rs"]
pub(crate) mod tests;

#[cfg(test)]
#[path = "summary_csv_soak_tests.rs"]
mod soak_tests;
