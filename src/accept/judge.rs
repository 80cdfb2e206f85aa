//! Judging: for every criterion, every measured point it selects, every threshold: the judged
//! quantity in each repeat, the criterion's statistic across repeats, pass or fail, margin.
//! Pure: the measurements and criteria in, the verdict's parts out.

use super::criteria::{Bound, Check, Criteria, Criterion, Reference, Stat};
use super::measure::{GroupKey, Measured, Observation, PointGroup};

use super::skew::{node_skew, rank_skew, slow_node, slow_rank};
use super::stragglers::{self, bias_culprit, bias_note, bias_value};
use super::verdict::{
    self, exit_code, totals, CheckVerdict, CriterionVerdict, Outcome, PointVerdict, RunView,
    Verdict, VERDICT_SCHEMA,
};
use crate::fit::predict::{predict, Query};
use crate::fit::schema::FitFile;
use crate::meta::RunStatus;

/// When and how the verdict was asked for (the only inputs that are not measurements).
#[derive(Clone, Debug)]
pub struct Header {
    pub created: String,
    pub command_line: Vec<String>,
}

/// Judges every criterion against the measurements.
pub fn judge(criteria: &Criteria, measured: &Measured, header: Header) -> Verdict {
    let judged: Vec<CriterionVerdict> = criteria
        .criteria
        .iter()
        .map(|c| judge_criterion(c, &measured.groups))
        .collect();
    let runs: Vec<RunView> = measured
        .runs
        .iter()
        .map(|r| RunView {
            path: r.dir.display().to_string(),
            status: status_name(r.status).into(),
            error: r.error.clone(),
            failure: r.failure.clone(),
        })
        .collect();
    let mut notes: Vec<String> = runs
        .iter()
        .filter(|r| r.status != "complete")
        .map(|r| {
            format!(
                "{} did not complete (status {}): the verdict cannot be complete",
                r.path, r.status
            )
        })
        .collect();
    let (counts, result) = totals(&judged, notes.is_empty());
    let reasons = verdict::tally(&judged, &runs);
    let stragglers = stragglers::section(&measured.runs);
    notes.extend(stragglers::notes(&stragglers));
    Verdict {
        schema: VERDICT_SCHEMA.into(),
        collbench_version: env!("CARGO_PKG_VERSION").into(),
        created: header.created,
        criteria_file: criteria.path.display().to_string(),
        name: criteria.name.clone(),
        command_line: header.command_line,
        runs,
        repeats: measured.runs.len(),
        result,
        exit_code: exit_code(result),
        counts,
        criteria: judged,
        reasons,
        stragglers,
        notes,
    }
}

/// meta.json's name of a run status.
fn status_name(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Running => "running",
        RunStatus::Complete => "complete",
        RunStatus::Failed => "failed",
        RunStatus::Interrupted => "interrupted",
    }
}

/// Judges one criterion against every point group.
pub fn judge_criterion(c: &Criterion, groups: &[PointGroup]) -> CriterionVerdict {
    let points: Vec<PointVerdict> = groups
        .iter()
        .filter(|g| selected(c, &g.key))
        .map(|g| judge_point(c, g))
        .collect();
    let (result, note) = if points.is_empty() {
        let why = format!(
            "matched no measured point ({}); widen the window or measure what it selects",
            c.select.describe()
        );
        (Outcome::NoData, Some(why))
    } else {
        (Outcome::combine(points.iter().map(|p| p.result)), None)
    };
    CriterionVerdict {
        name: c.name.clone(),
        selector: c.select.describe(),
        stat: c.stat.name().into(),
        result,
        points,
        note,
    }
}

/// Whether the criterion selects a point.
pub fn selected(c: &Criterion, k: &GroupKey) -> bool {
    c.select.matches(
        k.op,
        k.algo,
        k.proto,
        k.dtype,
        k.world,
        Some(k.nodes),
        k.bytes,
        k.in_place,
    )
}

fn judge_point(c: &Criterion, g: &PointGroup) -> PointVerdict {
    let predicted = c.reference.as_ref().map(|r| predicted_us(r, &g.key));
    let checks: Vec<CheckVerdict> = c
        .checks
        .iter()
        .map(|&chk| judge_check(chk, c.stat, g, predicted.as_ref()))
        .collect();
    let k = &g.key;
    let spans_nodes = k.nodes > 1;
    let mut point = PointVerdict {
        label: k.label(),
        op: k.op.name().into(),
        algo: k.algo.name().into(),
        proto: k.proto.map(|p| p.name().into()),
        dtype: k.dtype.name().into(),
        world: k.world,
        nodes: k.nodes,
        bytes: k.bytes,
        in_place: k.in_place,
        repeats: g.obs.len(),
        result: Outcome::combine(checks.iter().map(|c| c.result)),
        checks,
        slow_rank: slow_rank(&g.obs),
        slow_node: if spans_nodes {
            slow_node(&g.obs, k.world, k.nodes)
        } else {
            None
        },
    };
    let culprits: Vec<_> = (c.checks.iter().zip(&point.checks))
        .map(|(chk, v)| match chk {
            Check::MaxSlowestBias(_) | Check::MaxNodeSlowestBias(_) if v.reason.is_some() => {
                bias_culprit(g, matches!(chk, Check::MaxNodeSlowestBias(_)))
            }
            _ => v.reason.and_then(|r| verdict::culprit(r, &point)),
        })
        .collect();
    for (c, culprit) in point.checks.iter_mut().zip(culprits) {
        c.culprit = culprit;
    }
    point
}

/// The reference fit's time for a point: the point's own curve when the fit has it (the
/// regime holding the size, else the nearest), otherwise the cross-world model.
fn predicted_us(r: &Reference, k: &GroupKey) -> Result<f64, String> {
    if let Some(t) = curve_time_us(&r.fit, k) {
        return Ok(t);
    }
    predict(&r.fit, &query_of(k))
        .map(|p| p.time_us)
        .map_err(|e| format!("reference {}: {e}", r.path.display()))
}

/// The fit's question for a point: its op, algorithm, protocol, dtype, world, nodes, size and
/// communicator setup, the algorithm as measured.
pub fn query_of(k: &GroupKey) -> Query {
    Query {
        op: k.op,
        algo: k.algo,
        proto: k.proto,
        dtype: Some(k.dtype),
        world: k.world,
        nodes: k.nodes,
        bytes: k.bytes,
        comm: k.comm,
        algo_given: true,
    }
}

/// `alpha + beta·S` of the curve of exactly this point's op, algo, protocol, dtype, world,
/// nodes and placement, at the point's size.
pub fn curve_time_us(fit: &FitFile, k: &GroupKey) -> Option<f64> {
    let curve = fit.curves.iter().find(|c| {
        let ck = &c.key;
        (ck.op, ck.algo, ck.proto, ck.dtype) == (k.op, k.algo, k.proto, k.dtype)
            && (ck.world, ck.nodes.max(1), ck.in_place) == (k.world, k.nodes, k.in_place)
            && ck.comm == k.comm
    })?;
    let bytes = k.bytes as f64;
    Some(curve.regime(bytes).time_us(bytes))
}

/// One threshold at one point.
fn judge_check(
    chk: Check,
    stat: Stat,
    g: &PointGroup,
    predicted: Option<&Result<f64, String>>,
) -> CheckVerdict {
    let mut values = Vec::new();
    let mut missing: Option<String> = None;
    for o in &g.obs {
        match repeat_value(chk, o, &g.key, predicted) {
            Ok(v) => values.push(v),
            Err(why) => missing = missing.or(Some(why)),
        }
    }
    let measured = if values.is_empty() {
        None
    } else if let Check::MaxWrong(_) = chk {
        Some(values.iter().sum())
    } else if let Check::MaxDrift(_) = chk {
        // Over the series, in order: the soak's cycles, the repeats.
        crate::stats::drift(&values)
    } else {
        Some(statistic(stat, chk.bound(), &values))
    };
    let result = match measured {
        None => Outcome::NoData,
        Some(m) if chk.passes(m) => Outcome::Pass,
        Some(_) => Outcome::Fail,
    };
    let note = match (&missing, values.len()) {
        (Some(why), 0) => Some(why.clone()),
        (None, n) if n < 2 && matches!(chk, Check::MaxDrift(_)) => {
            Some("one cycle and one repeat: no drift to judge".into())
        }
        (Some(why), n) => Some(format!("{n} of {} repeats: {why}", g.obs.len())),
        (None, _) if matches!(chk, Check::MaxSlowestBias(_)) => bias_note(g, false),
        (None, _) if matches!(chk, Check::MaxNodeSlowestBias(_)) => bias_note(g, true),
        (None, _) => (g.key.nodes <= 1 && matches!(chk, Check::MaxNodeSkew(_)))
            .then(|| "one node: judged as per-rank skew".to_string()),
    };
    CheckVerdict {
        check: chk.key().into(),
        unit: chk.unit().into(),
        values,
        measured,
        threshold: chk.threshold(),
        margin_pct: measured.and_then(|m| chk.margin_pct(m)),
        predicted_us: predicted.and_then(|p| p.as_ref().ok().copied()),
        result,
        reason: result.reason(chk),
        culprit: None,
        note,
    }
}

/// The judged quantity in one repeat, or why it is not defined there.
fn repeat_value(
    chk: Check,
    o: &Observation,
    k: &GroupKey,
    predicted: Option<&Result<f64, String>>,
) -> Result<f64, String> {
    let r = &o.record;
    let finite = |x: f64, what: &str| match (x.is_finite(), r.has_samples()) {
        (true, _) => Ok(x),
        (false, true) => Err(format!("{what} is not defined")),
        (false, false) => Err(format!(
            "{what} is not defined: imported from a log without per-iteration samples"
        )),
    };
    let no_ranks = || "no ranks.csv rows for the point".to_string();
    match chk {
        Check::MinBusbw(_) => finite(r.busbw_gbps, "busbw_gbps"),
        // A point imported from a log has only a mean: judged on it.
        Check::MaxTime(_) => finite(r.time_us_typical(), "time_us_median"),
        Check::MaxCv(_) => finite(r.time_cv, "time_cv"),
        Check::MaxRankSkew(_) => rank_skew(&o.ranks).map(|s| s.0).ok_or_else(no_ranks),
        Check::MaxNodeSkew(_) => node_skew(&o.ranks, k.world, k.nodes)
            .map(|s| s.0)
            .ok_or_else(no_ranks),
        Check::MaxSlowestBias(_) => bias_value(false, o, k),
        Check::MaxNodeSlowestBias(_) => bias_value(true, o, k),
        Check::MaxFitDeviation(_) | Check::MaxFitSlowdown(_) => {
            let pred = match predicted {
                Some(Ok(p)) if *p > 0.0 => *p,
                Some(Ok(p)) => return Err(format!("the reference predicts {p} us")),
                Some(Err(e)) => return Err(e.clone()),
                None => return Err("no reference fit".into()),
            };
            let dev = finite(r.time_us_typical(), "time_us_median")? / pred - 1.0;
            Ok(if let Check::MaxFitDeviation(_) = chk {
                dev.abs()
            } else {
                dev
            })
        }
        Check::MaxWrong(_) => Ok(r.wrong as f64),
        Check::MaxDrift(_) => finite(r.time_us_typical(), "time_us_median"),
    }
}

/// The statistic of the repeats' values; `worst` is the lowest for a floor and the highest for
/// a ceiling. `values` is not empty.
pub fn statistic(stat: Stat, bound: Bound, values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let (lo, hi) = (v[0], v[v.len() - 1]);
    match stat {
        Stat::Median => crate::stats::median(&v),
        Stat::Mean => v.iter().sum::<f64>() / v.len() as f64,
        Stat::Min => lo,
        Stat::Max => hi,
        Stat::Worst => match bound {
            Bound::AtLeast => lo,
            Bound::AtMost => hi,
        },
    }
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
