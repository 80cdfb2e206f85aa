//! The nccl-tests text reader against the real logs in tests/data/import/nccl-tests (see the
//! README there for their sources): every expected value in these modules was read off the log
//! itself.
//!
//! What every run of a log says about itself (its facts, the kind and the first and last of
//! its rows) stands in one table per theme, walked by `check_runs`; the tests beside each table
//! check what is particular to one log.

use super::*;
use crate::import::log::{Half, LogRun, Row};

#[path = "nccl_text_tests/current_releases.rs"]
mod current_releases;
#[path = "nccl_text_tests/cuts_and_errors.rs"]
mod cuts_and_errors;
#[path = "nccl_text_tests/old_releases.rs"]
mod old_releases;

/// A log: its file name (for failure messages) and its text.
#[derive(Clone, Copy)]
struct Log {
    file: &'static str,
    text: &'static str,
}

macro_rules! log {
    ($file:literal) => {
        Log {
            file: $file,
            text: include_str!(concat!("../../tests/data/import/nccl-tests/", $file)),
        }
    };
}

const OLD_V100: Log = log!("all_reduce_old_noroot_g8_v100_errorfloat.log");
const MULTI_2019: Log = log!("multi_coll_2019_g12_dgx2_old_percoll_columns.log");
const AG_2019: Log = log!("all_gather_2019_g12_noredop_column.log");
const BCAST_2019: Log = log!("broadcast_2019_g12_root_noredop.log");
const REDUCE_2019: Log = log!("reduce_2019_g12_redop_and_root.log");
const EFA_16: Log = log!("all_reduce_old_noroot_2node_16gpu_tagged_ncclinfo.log");
const T4: Log = log!("all_reduce_2node_2gpu_t4_tagged_ncclinfo_root.log");
const AR_218: Log = log!("all_reduce_v2.18.0_tagged_stderr_versionheader.log");
const AG_218: Log = log!("all_gather_v2.18.0_tagged_stderr_versionheader.log");
const MULTI_2178: Log =
    log!("multi_coll_v2.17.8_1node_8proc_h100_allreduce_allgather_rs_alltoall_sendrecv.log");
const TEN_NODE: Log = log!("all_reduce_v2.17.8_10node_80rank_h100.log");
const SMOKE: Log = log!("allreduce_sendrecv_smoke_v2.17.8_2node_h100.log");
const FAILED_MIDTABLE: Log =
    log!("alltoall_failed_midtable_then_sendrecv_exp_time_v2.17.6_2node_8rank.log");
const CUT_AFTER_HEADER: Log =
    log!("alltoall_ok_then_sendrecv_truncated_after_header_v2.17.6_2node.log");
const NO_VERSION: Log = log!("alltoall_sendrecv_starting_line_no_version_header_2node.log");

const V100_SXM2: &str = "Tesla V100-SXM2-16GB";
const V100_SXM3: &str = "Tesla V100-SXM3-32GB";
const H100: &str = "NVIDIA H100 80GB HBM3";

/// What a run says about itself, in one comparable value.
#[derive(Debug, PartialEq)]
struct Facts<'a> {
    test: Option<&'a str>,
    version: Option<&'a str>,
    library: Option<&'a str>,
    ranks: usize,
    hosts: Vec<&'a str>,
    gpu0: Option<&'a str>,
    lines: (usize, usize),
    truncated: bool,
    foreign: usize,
    rows: usize,
}

fn facts(run: &LogRun) -> Facts<'_> {
    let mut hosts: Vec<&str> = Vec::new();
    for r in &run.ranks {
        if !hosts.contains(&r.host.as_str()) {
            hosts.push(&r.host);
        }
    }
    Facts {
        test: run.test.as_deref(),
        version: run.tool_version.as_deref(),
        library: run.library.as_deref(),
        ranks: run.ranks.len(),
        hosts,
        gpu0: run.ranks.first().map(|r| r.gpu.as_str()),
        lines: (run.first_line, run.last_line),
        truncated: run.truncated,
        foreign: run.foreign_lines,
        rows: run.rows.len(),
    }
}

/// (time, algbw, busbw, wrong, error) of a half.
type H = (f64, Option<f64>, Option<f64>, Option<u64>, Option<f64>);

fn half(h: &Option<Half>) -> Option<H> {
    h.as_ref()
        .map(|h| (h.time_us, h.algbw_gbps, h.busbw_gbps, h.wrong, h.error))
}

/// A half whose `#wrong` column says 0.
const fn ok(time: f64, algbw: f64, busbw: f64) -> Option<H> {
    Some((time, Some(algbw), Some(busbw), Some(0), None))
}

/// A half whose `#wrong` column says `N/A` (not checked).
const fn na(time: f64, algbw: f64, busbw: f64) -> Option<H> {
    Some((time, Some(algbw), Some(busbw), None, None))
}

/// A half of an old release, whose last column is the float `error`.
const fn err(time: f64, algbw: f64, busbw: f64, error: f64) -> Option<H> {
    Some((time, Some(algbw), Some(busbw), None, Some(error)))
}

/// (line, bytes, count, out-of-place, in-place) of a row.
type R = (usize, u64, Option<u64>, Option<H>, Option<H>);

fn row(r: &Row) -> R {
    (
        r.line,
        r.bytes,
        r.count,
        half(&r.out_of_place),
        half(&r.in_place),
    )
}

/// (type, redop, root) of a row.
type Kind = (&'static str, &'static str, Option<i64>);

/// Who ran a log, as its version lines and rank list say.
#[derive(Clone, Copy)]
struct Setup {
    version: Option<&'static str>,
    library: Option<&'static str>,
    ranks: usize,
    hosts: &'static [&'static str],
    gpu0: Option<&'static str>,
}

/// One run of a log, as the log prints it.
struct Expected {
    log: Log,
    /// Which run of the file, and of how many.
    run: (usize, usize),
    test: Option<&'static str>,
    setup: Setup,
    lines: (usize, usize),
    truncated: bool,
    /// Lines inside the run that are not the benchmark's.
    foreign: usize,
    rows: usize,
    /// What every row of the run is.
    kind: Kind,
    /// The first and the last row; `None` for a run without rows.
    edges: Option<(R, R)>,
}

impl Expected {
    fn facts(&self) -> Facts<'static> {
        Facts {
            test: self.test,
            version: self.setup.version,
            library: self.setup.library,
            ranks: self.setup.ranks,
            hosts: self.setup.hosts.to_vec(),
            gpu0: self.setup.gpu0,
            lines: self.lines,
            truncated: self.truncated,
            foreign: self.foreign,
            rows: self.rows,
        }
    }
}

/// Checks every run of `table` against its log, naming the file and run on a failure.
fn check_runs(table: &[Expected]) {
    for want in table {
        let Log { file, text } = want.log;
        let (i, of) = want.run;
        let runs = match parse(text) {
            Ok(runs) => runs,
            Err(e) => panic!("{file}: parse failed: {e:?}"),
        };
        assert_eq!(runs.len(), of, "{file}: runs");
        let run = &runs[i];
        assert_eq!(facts(run), want.facts(), "{file} run {i}");
        for r in &run.rows {
            let kind = (r.type_name.as_str(), r.redop_name.as_str(), r.root);
            assert_eq!(kind, want.kind, "{file} run {i} line {}", r.line);
        }
        let edges = run.rows.first().zip(run.rows.last());
        let edges = edges.map(|(first, last)| (row(first), row(last)));
        assert_eq!(edges, want.edges, "{file} run {i}: first and last row");
    }
}

fn parse_ok(text: &str) -> Vec<LogRun> {
    match parse(text) {
        Ok(runs) => runs,
        Err(e) => panic!("parse failed: {e:?}"),
    }
}

/// The only run of a log.
fn only_run(log: Log) -> LogRun {
    let mut runs = parse_ok(log.text);
    assert_eq!(runs.len(), 1, "{}", log.file);
    runs.remove(0)
}

/// A header setting, as printed.
fn setting<'a>(run: &'a LogRun, key: &str) -> Option<&'a str> {
    run.header.get(key).map(String::as_str)
}

/// The out-of-place half of row `i`.
fn out_of_place(run: &LogRun, i: usize) -> &Half {
    run.rows[i]
        .out_of_place
        .as_ref()
        .expect("an out-of-place half")
}
