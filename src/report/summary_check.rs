//! The physical check of a summary.csv row once it has parsed, by the ranges of
//! [`crate::physical`] (the rule every reader of numbers uses).

use crate::model::record::{PointRecord, NCCL_ALGOS, NCCL_PROTOS};
use crate::physical::{
    BYTES, ITERS, MEASURED_GBPS, MEASURED_GBPS_OR_ZERO, RATIO, TIME_US, TIME_US_OR_ZERO, WORLD,
};

/// The first impossible value of a record (by the ranges of [`crate::physical`]), as
/// `column = value is outside ...`: a world, node or size count out of range, a time or bandwidth that is not
/// positive. Empty fields (NaN: undefined) pass, but for the mean time and algbw: a point
/// imported from a log has a mean and no median.
/// A name column holds one of `names` (or nothing).
fn check_named(column: &str, value: Option<&str>, names: &[&str]) -> Result<(), String> {
    match value {
        Some(v) if !names.contains(&v) => Err(format!(
            "column {column}: '{v}' is not one of {}",
            names.join(", ")
        )),
        _ => Ok(()),
    }
}

/// `nccl_call` names the op's own NCCL function, or for a point-to-point op its group.
fn check_nccl_call(rec: &PointRecord) -> Result<(), String> {
    let op = rec.key.op;
    match rec.nccl_call.as_deref() {
        None => Ok(()),
        Some(c) if c == op.nccl_function() => Ok(()),
        Some(c) if c == crate::collective::NCCL_GROUPED_P2P && op.nccl_point_to_point() => Ok(()),
        Some(c) => Err(format!(
            "column nccl_call: '{c}' does not run {op} (expected {} or {})",
            op.nccl_function(),
            crate::collective::NCCL_GROUPED_P2P
        )),
    }
}

/// A root inside the group, and an algorithm the row's backend has for its op (a Bruck Gather
/// was never measured by anyone).
fn check_root_and_algo(rec: &PointRecord) -> Result<(), String> {
    let k = &rec.key;
    if let Some(r) = k.root.filter(|&r| r >= k.world) {
        return Err(format!(
            "column root: {r} is not a rank of a group of {} (0 to {})",
            k.world,
            k.world - 1
        ));
    }
    let Ok(backend) = k.backend.parse::<crate::model::call::BackendKind>() else {
        return Ok(());
    };
    let algos = backend.algos(k.op);
    if !algos.contains(&k.algo) {
        let names: Vec<&str> = algos.iter().map(|a| a.name()).collect();
        return Err(format!(
            "column algo: {} has no {} algorithm on the {} backend (it has {})",
            k.op,
            k.algo,
            k.backend,
            names.join(", ")
        ));
    }
    Ok(())
}

/// The optional numbers added after v1 first appeared, NaN where absent, with their ranges.
fn later_columns(rec: &PointRecord) -> [(&'static str, f64, crate::physical::Range); 4] {
    let absent = |x: Option<f64>| x.unwrap_or(f64::NAN);
    [
        ("loop_time_us", absent(rec.loop_time_us), TIME_US),
        ("slowdown", absent(rec.slowdown), RATIO),
        ("compute_slowdown", absent(rec.compute_slowdown), RATIO),
        (
            "aggregate_busbw_gbps",
            absent(rec.aggregate_busbw_gbps),
            MEASURED_GBPS_OR_ZERO,
        ),
    ]
}

pub(super) fn check_record(rec: &PointRecord) -> Result<(), String> {
    let k = &rec.key;
    let counts = [
        ("world", k.world, WORLD),
        ("nodes", k.nodes, WORLD),
        ("bytes", k.bytes, BYTES),
    ];
    for (column, n, range) in counts {
        range.check_usize(column, n)?;
    }
    // 0: the log a point was imported from does not say (OSU without -f).
    if rec.iters != 0 {
        ITERS.check_usize("iters", rec.iters)?;
    }
    if k.nodes > k.world {
        return Err(format!(
            "column nodes: {} exceeds world {}",
            k.nodes, k.world
        ));
    }
    let required = [
        ("time_us_mean", rec.time_us_mean, TIME_US),
        ("algbw_gbps", rec.algbw_gbps, MEASURED_GBPS),
    ];
    let optional = [
        ("time_us_median", rec.time_us_median, TIME_US),
        ("time_us_min", rec.time_us_min, TIME_US_OR_ZERO),
        ("time_us_p95", rec.time_us_p95, TIME_US_OR_ZERO),
        ("time_us_p99", rec.time_us_p99, TIME_US_OR_ZERO),
        ("time_us_max", rec.time_us_max, TIME_US_OR_ZERO),
        ("time_us_stddev", rec.time_us_stddev, TIME_US_OR_ZERO),
        ("time_us_mad", rec.time_us_mad, TIME_US_OR_ZERO),
        ("skew_us_median", rec.skew_us_median, TIME_US_OR_ZERO),
        ("time_cv", rec.time_cv, RATIO),
        ("busbw_gbps", rec.busbw_gbps, MEASURED_GBPS_OR_ZERO),
        (
            "busbw_gbps_mean",
            rec.busbw_gbps_mean,
            MEASURED_GBPS_OR_ZERO,
        ),
    ];
    check_nccl_call(rec)?;
    check_root_and_algo(rec)?;
    check_named("nccl_algo", rec.nccl_algo.as_deref(), &NCCL_ALGOS)?;
    check_named("nccl_proto", rec.nccl_proto.as_deref(), &NCCL_PROTOS)?;
    let undefined = optional
        .into_iter()
        .chain(later_columns(rec))
        .filter(|(_, x, _)| !x.is_nan());
    for (column, x, range) in required.into_iter().chain(undefined) {
        range.check(column, x)?;
    }
    Ok(())
}
