//! One run of a log as collbench points and metadata: op, world, nodes and GPUs from the log,
//! each table half a point whose only time is the log's average per call. Pure: no I/O.

use super::bwcheck::mismatch;
use super::log::{Half, LogRun, Row, Tool};
use crate::collective::{algbw_gbps, busbw_gbps, Algo, DType, Layout, Op, Proto, ReduceOp};
use crate::meta::{HostInfo, ImportInfo, Meta};
use crate::model::call::BackendKind;
use crate::model::record::{IterSample, PointKey, PointRecord};

/// What the user told `collbench import` where the log is silent.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// The test binary (nccl-tests) or collective (OSU), when the log does not name it.
    pub test: Option<String>,
    pub algo: Option<Algo>,
    pub proto: Option<Proto>,
    /// Ranks, when the log does not list them.
    pub world: Option<usize>,
    /// Hosts, when the log does not list the ranks.
    pub nodes: Option<usize>,
    /// The element type, for logs that do not record it (NCCL Inspector's).
    pub dtype: Option<DType>,
}

/// A run ready to be written as a results folder.
#[derive(Clone, Debug)]
pub struct Converted {
    pub op: Op,
    pub meta: Meta,
    pub records: Vec<PointRecord>,
    /// Each record's per-iteration samples (empty where the log has none).
    pub samples: Vec<Vec<IterSample>>,
    /// What the user should hear (bandwidth mismatches, rows skipped), one line each.
    pub warnings: Vec<String>,
}

/// How a run's points are keyed, decided once per run.
struct RunKeys {
    tool: Tool,
    backend: &'static str,
    op: Op,
    algo: Algo,
    proto: Option<Proto>,
    world: usize,
    nodes: usize,
    iters: usize,
    warmup: usize,
}

/// The points of one run. `op` is the collective the run measured; `source` names the log.
pub fn convert(
    tool: Tool,
    run: &LogRun,
    op: Op,
    source: &str,
    ov: &Overrides,
    command_line: Vec<String>,
) -> Result<Converted, String> {
    let (hosts, rank_nodes) = hosts_of(run);
    let world = world_of(run, ov)?;
    let (algo, proto, algo_from) = algo_and_proto(tool, run, ov);
    super::names::check_algo(tool, op, ov.algo)?;
    let keys = RunKeys {
        tool,
        backend: if tool == Tool::Osu {
            BackendKind::Mpi
        } else {
            BackendKind::Nccl
        }
        .name(),
        op,
        algo,
        proto,
        world,
        nodes: if hosts.is_empty() {
            ov.nodes.unwrap_or(1).min(world)
        } else {
            hosts.len()
        },
        iters: iterations(run),
        warmup: run.header_number("warmup iters").unwrap_or(0) as usize,
    };
    let mut out = Converted {
        op,
        meta: Meta::new(
            command_line,
            keys.backend,
            "unknown",
            world,
            keys.nodes,
            super::info::options(run),
        ),
        records: Vec::new(),
        samples: Vec::new(),
        warnings: Vec::new(),
    };
    let mut info = super::info::import_info(tool, run, source, op, algo_from);
    for row in &run.rows {
        add_row(row, &keys, &mut out, &mut info);
    }
    number_cycles(&mut out.records);
    info.per_iteration_samples = out.samples.iter().any(|s| !s.is_empty());
    describe_machine(&mut out.meta, run, hosts, rank_nodes);
    out.meta.import = Some(info);
    out.meta.timing = None;
    Ok(out)
}

/// nccl-tests `-N N` prints the table N times over: the k-th row of a point is its cycle k,
/// as a soak of collbench's own numbers them.
fn number_cycles(records: &mut [PointRecord]) {
    let mut seen: std::collections::HashMap<PointKey, u64> = Default::default();
    for r in records {
        let k = seen.entry(r.key.clone()).or_insert(0);
        r.cycle = *k;
        *k += 1;
    }
}

/// The ranks of the run: its rank list, or `--world`; both must agree.
pub(super) fn world_of(run: &LogRun, ov: &Overrides) -> Result<usize, String> {
    let listed = run.ranks.len();
    match (listed, ov.world) {
        (0, Some(w)) => Ok(w),
        (0, None) => Err("the log lists no ranks (`#  Rank  0 ...` lines); give --world N".into()),
        (n, Some(w)) if n != w => Err(format!("the log lists {n} ranks but --world is {w}")),
        (n, _) => Ok(n),
    }
}

/// Distinct hosts in order of first appearance, and each rank's index into them.
fn hosts_of(run: &LogRun) -> (Vec<String>, Vec<usize>) {
    let names: Vec<String> = run.ranks.iter().map(|r| r.host.clone()).collect();
    let topo = crate::model::topology::Topology::from_hosts(&names);
    (topo.hosts, topo.node_of)
}

/// Calls timed per point: `iters` × `agg iters` (nccl-tests groups `agg` calls per iteration).
fn iterations(run: &LogRun) -> usize {
    let iters = run.header_number("iters").unwrap_or(0);
    let agg = run.header_number("agg iters").unwrap_or(1).max(1);
    iters.saturating_mul(agg).min(1_000_000_000) as usize
}

/// The algorithm and protocol: flags first, then what NCCL's INFO lines say was forced, else
/// `auto` (NCCL chose, per size; the log does not say what).
fn algo_and_proto(tool: Tool, run: &LogRun, ov: &Overrides) -> (Algo, Option<Proto>, String) {
    use super::names::{nccl_algo, nccl_proto};
    let from_log = (run.env_algo.as_deref(), run.env_proto.as_deref());
    let algo = ov.algo.or(from_log.0.map(nccl_algo)).unwrap_or(Algo::Auto);
    let proto = match tool {
        Tool::Osu => ov.proto,
        Tool::NcclTests => Some(
            ov.proto
                .or(from_log.1.map(nccl_proto))
                .unwrap_or(Proto::Auto),
        ),
    };
    let from = if ov.algo.is_some() || ov.proto.is_some() {
        "flag"
    } else if from_log.0.is_some() || from_log.1.is_some() {
        "log"
    } else {
        "unknown"
    };
    (algo, proto, from.to_string())
}

/// The points of one row (out-of-place, then in-place), or a note saying why it was skipped.
fn add_row(row: &Row, keys: &RunKeys, out: &mut Converted, info: &mut ImportInfo) {
    let typed = dtype_of(&row.type_name)
        .and_then(|d| Ok((d, super::names::nccl_redop(&row.redop_name, keys.op)?)));
    let (dtype, redop) = match typed {
        Ok(t) => t,
        Err(why) => return skip(out, info, row.line, &why),
    };
    let halves = [(&row.out_of_place, false), (&row.in_place, true)];
    for (half, in_place) in halves {
        let Some(half) = half else { continue };
        let checked = point(row, half, in_place, dtype, redop, keys)
            .and_then(|rec| crate::report::summary_csv::check_point(&rec).map(|()| rec));
        match checked {
            Ok(rec) => {
                note_checks(row, half, keys, out, info);
                out.records.push(rec);
                out.samples.push(half.samples.clone());
            }
            Err(why) => skip(out, info, row.line, &why),
        }
    }
}

/// The dtype of a row (OSU's MPI_CHAR, its default, is `char`: nccl-tests' old name of int8).
fn dtype_of(name: &str) -> Result<DType, String> {
    super::names::nccl_dtype(name)
}

/// Bandwidth mismatches and skipped rows kept in meta.json's notes, each (the count is whole).
const MAX_NOTED: usize = 20;

fn skip(out: &mut Converted, info: &mut ImportInfo, line: usize, why: &str) {
    let text = format!("line {line}: skipped: {why}");
    // The two halves of a row (out of place, in place) fail alike: said once.
    if out.warnings.last() == Some(&text) {
        return;
    }
    out.warnings.push(text.clone());
    if info.notes.len() < 2 * MAX_NOTED {
        info.notes.push(text);
    }
}

/// Records the log's own check (`#wrong`, `error`) and bandwidth agreement for one half.
fn note_checks(row: &Row, half: &Half, keys: &RunKeys, out: &mut Converted, info: &mut ImportInfo) {
    if half.wrong.is_none() && half.error.is_none() {
        info.checked = false;
    }
    if let Some(e) = half.error {
        info.max_error = Some(info.max_error.map_or(e, |m: f64| m.max(e)));
    }
    let (op, world) = (keys.op, keys.world);
    let factors = (op.algbw_factor(world), op.busbw_factor(world));
    if let Some(m) = mismatch(row.bytes, factors, half) {
        info.bandwidth_mismatches += 1;
        let text = format!("line {}: {m}", row.line);
        if info.bandwidth_mismatches <= MAX_NOTED {
            info.notes.push(text.clone());
        }
        out.warnings.push(text);
    }
}

/// The root of a point of `op` from the row's `root` column: none for an op without a root
/// (nccl-tests prints -1 there); 0, both tools' default, where a rooted op's log has no column.
fn root_of(op: Op, column: Option<i64>) -> Option<usize> {
    op.rooted()
        .then(|| column.and_then(|r| usize::try_from(r).ok()).unwrap_or(0))
}

/// One half of a row as a point. Its time is the log's average, and busbw comes from it; the
/// quantile and spread columns come from the half's per-iteration times where the log has them
/// (nccl-tests -I), else stay undefined (empty in summary.csv).
fn point(
    row: &Row,
    half: &Half,
    in_place: bool,
    dtype: DType,
    redop: ReduceOp,
    keys: &RunKeys,
) -> Result<PointRecord, String> {
    let total = match keys.tool {
        Tool::Osu => super::osu::total_bytes(keys.op, row.bytes, keys.world),
        Tool::NcclTests => row.bytes,
    };
    let bytes = usize::try_from(total).map_err(|_| format!("size {total} B is too large"))?;
    if bytes == 0 {
        return Err("0 B: nothing was moved".into());
    }
    if bytes % dtype.size() != 0 {
        return Err(format!(
            "{bytes} B is not a whole number of {dtype} elements"
        ));
    }
    // Our count is the elements in S (old nccl-tests printed AllGather's per rank); an
    // alltoallv's is the per-rank total it was generated from, nccl-tests' count (per peer)
    // times the ranks (0 for a matrix).
    let count = match (keys.op.layout(), row.count) {
        (Layout::Uneven, Some(c)) => usize::try_from(c).map_or(0, |c| c.saturating_mul(keys.world)),
        _ => bytes / dtype.size(),
    };
    // OMB's osu_alltoallv sends every rank the same count; an nccl-tests log does not say.
    let traffic = (keys.op.layout() == Layout::Uneven && keys.tool == Tool::Osu)
        .then(|| "uniform".to_string());
    let algbw = algbw_gbps(keys.op, bytes, keys.world, half.time_us);
    let busbw = busbw_gbps(keys.op, keys.world, algbw);
    let undefined = f64::NAN;
    // nccl-tests -I: the spread from its per-iteration times; the mean stays its loop average.
    let times: Vec<f64> = half.samples.iter().map(|s| s.time_us).collect();
    let spread = crate::stats::Summary::of(&times);
    let of = |f: fn(&crate::stats::Summary) -> f64| spread.as_ref().map_or(undefined, f);
    // Else the table's -I columns: min, max, p99 and CV as printed.
    let printed = |f: fn(&super::log::PrintedSpread) -> f64| match spread {
        Some(_) => undefined,
        None => half.spread.as_ref().map_or(undefined, f),
    };
    let either = |a: f64, b: f64| if a.is_nan() { b } else { a };
    Ok(PointRecord {
        key: PointKey {
            backend: keys.backend.into(),
            op: keys.op,
            algo: keys.algo,
            dtype,
            redop,
            world: keys.world,
            nodes: keys.nodes,
            bytes,
            count,
            in_place,
            proto: keys.proto,
            root: root_of(keys.op, row.root),
            comm: Default::default(),
            traffic,
            group: None,
            concurrent: None,
        },
        iters: half.iters.unwrap_or(keys.iters),
        warmup: keys.warmup,
        time_us_mean: half.time_us,
        time_us_median: of(|s| s.median),
        time_us_min: either(of(|s| s.min), printed(|p| p.min_us)),
        time_us_p95: of(|s| s.p95),
        time_us_p99: either(of(|s| s.p99), printed(|p| p.p99_us)),
        time_us_max: either(of(|s| s.max), printed(|p| p.max_us)),
        time_us_stddev: of(|s| s.stddev),
        time_cv: either(of(|s| s.cv), printed(|p| p.cv)),
        time_us_mad: of(|s| s.mad),
        algbw_gbps: algbw,
        busbw_gbps: busbw,
        busbw_gbps_mean: busbw,
        wrong: half
            .wrong
            .unwrap_or_else(|| wrong_by_error(half.error, dtype)),
        slowest_rank: 0,
        skew_us_median: undefined,
        nccl_estimate_us: None,
        // The log's time is nccl-tests' loop time (OSU's average latency is per call with a
        // barrier after each, not a loop).
        loop_time_us: (keys.tool == Tool::NcclTests).then_some(half.time_us),
        nccl_call: None,
        nccl_algo: None,
        nccl_proto: None,
        cycle: 0,
        ended_utc: None,
        slowdown: None,
        aggregate_busbw_gbps: None,
        compute_slowdown: None,
    })
}

/// Old releases print the largest deviation (`error`) instead of a count: beyond nccl-tests'
/// own tolerance for the type (`DeltaMaxValue` in nccl-tests src/common.cu of those releases:
/// half and bfloat16 1e-2, float 1e-5, double 1e-12, integers exact) at least one element was
/// wrong, recorded as 1.
fn wrong_by_error(error: Option<f64>, dtype: DType) -> u64 {
    let tolerance = match dtype {
        // Those releases predate fp8; it is given half precision's tolerance.
        DType::F16 | DType::BF16 | DType::F8E4M3 | DType::F8E5M2 => 1e-2,
        DType::F32 => 1e-5,
        DType::F64 => 1e-12,
        DType::I32 | DType::I8 | DType::U8 | DType::U32 | DType::I64 | DType::U64 => 0.0,
    };
    u64::from(error.is_some_and(|e| e > tolerance))
}

/// The machine as far as the log tells: rank 0's host, every rank's host and GPU. What the log
/// does not say (CPU, memory, OS) is `unknown` or 0, never this machine's.
fn describe_machine(meta: &mut Meta, run: &LogRun, hosts: Vec<String>, rank_nodes: Vec<usize>) {
    meta.host = HostInfo {
        hostname: hosts.first().cloned().unwrap_or_else(|| "unknown".into()),
        os: "unknown".into(),
        arch: "unknown".into(),
        cpu_model: "unknown".into(),
        cores: 0,
        mem_total_bytes: 0,
        mem_available_bytes: 0,
    };
    meta.rank_nodes = if rank_nodes.is_empty() {
        vec![0; meta.ranks]
    } else {
        rank_nodes
    };
    meta.hosts = if hosts.is_empty() {
        vec!["unknown".into()]
    } else {
        hosts
    };
    meta.gpus = run.ranks.iter().map(|r| r.gpu.clone()).collect();
    meta.library = run.library.clone();
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
