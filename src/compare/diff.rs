//! Matching two runs' points and judging each pair. Pure.
//!
//! Points match on (op, algo, proto, dtype, world, bytes, in_place, root): an NCCL point measured with
//! LL is compared with LL only. A point without a protocol (host, MPI) matches one whose protocol
//! was left to the library (`auto`): neither forced one.
//! The ratio of a pair is taken on
//! the median time, B/A; where a side has no median (a run imported from a log that prints one
//! average per size), on nccl-tests' loop time where both sides have one (an imported nccl-tests
//! log beside a collbench run: the same quantity on both sides), else on the mean, on both sides
//! alike. A pair regresses when B's median time exceeds A's by more than the threshold and
//! the difference is more than noise: larger than an absolute floor (`--min-diff-us`, for
//! sub-microsecond times where the clock's own steps are a large fraction), and, where both
//! sides have per-iteration samples, significant by the Mann-Whitney U test at `--alpha`
//! ([`crate::stats::mann_whitney_p`]); and when B has wrong elements. Faster is judged alike. At a fixed size and world, busbw is proportional
//! to 1/time, so the same pair's busbw ratio is the inverse: judging small messages by time and
//! large ones by bandwidth would give the same answer, and one rule never flips at a size.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::collective::{Algo, DType, Op, Proto, ReduceOp};
use crate::fit::schema::algo_label;
use crate::model::comm_setup::CommSetup;
use crate::model::record::{root_label, PointRecord};
use crate::report::run_reader::MeasuredPoint;
use crate::stats::mann_whitney_p;

/// Schema id of `collbench compare --json`.
pub const COMPARE_SCHEMA: &str = "collbench.compare/v1";

/// What makes two points the same measurement.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MatchKey {
    pub op: Op,
    pub algo: Algo,
    pub proto: Option<Proto>,
    pub dtype: DType,
    pub world: usize,
    pub bytes: usize,
    pub in_place: bool,
    /// The root of a rooted op; None for the others.
    pub root: Option<usize>,
    /// The NCCL communicators' registration and CTA settings (the default elsewhere).
    pub comm: CommSetup,
    /// The reduction (sum for the ops that do not reduce).
    pub redop: ReduceOp,
    /// An alltoallv's traffic (summary.csv's `traffic`); None for the other ops and where a
    /// log does not say.
    pub traffic: Option<String>,
    /// A `--split` point's group and what ran beside it ([`PointKey::group_label`]).
    pub group: Option<String>,
}

/// nccl-tests' alltoallv pattern where none is set, as collbench labels it.
const NCCL_TESTS_DEFAULT_TRAFFIC: &str = "spread 1";

impl MatchKey {
    fn of(r: &PointRecord) -> MatchKey {
        let k = &r.key;
        MatchKey {
            op: k.op,
            algo: k.algo,
            proto: k.proto,
            dtype: k.dtype,
            world: k.world,
            bytes: k.bytes,
            in_place: k.in_place,
            root: k.root,
            comm: k.comm,
            redop: k.redop,
            traffic: k.traffic.clone(),
            group: k.group_label(),
        }
    }

    /// The key points match on: `auto` forces no protocol, as none at all does; an alltoallv
    /// whose log does not say its traffic (nccl-tests') is taken to have run nccl-tests'
    /// default, spread 1.
    fn matching(&self) -> MatchKey {
        let traffic = match self.traffic.as_deref() {
            Some(NCCL_TESTS_DEFAULT_TRAFFIC) => None,
            _ => self.traffic.clone(),
        };
        MatchKey {
            proto: self.proto.filter(|p| *p != Proto::Auto),
            traffic,
            ..self.clone()
        }
    }

    /// E.g. `allreduce ring f32 w2 1 KiB`, `allreduce ring/ll128 bf16 w8 1 MiB`, `gather
    /// binomial f32 w4 1 KiB root 2` (root 0, the default, unnamed), `allreduce ring f32/prod
    /// w2 1 KiB` (a reduction other than sum named).
    pub fn label(&self) -> String {
        let redop = match self.redop {
            ReduceOp::Sum => String::new(),
            r => format!("/{r}"),
        };
        format!(
            "{} {} {}{redop} w{} {}{}{}{}",
            self.op,
            algo_label(self.algo, self.proto),
            self.dtype,
            self.world,
            crate::units::format_size(self.bytes),
            if self.in_place { " in-place" } else { "" },
            root_label(self.root),
            self.comm.label()
        ) + &self
            .traffic
            .as_ref()
            .map_or(String::new(), |t| format!(" traffic {t}"))
            + &self
                .group
                .as_ref()
                .map_or(String::new(), |g| format!(" {g}"))
    }
}

/// How a pair compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Within the threshold either way, or a difference no larger than noise.
    Same,
    /// B's median time is below A's by more than the threshold (ratio < 1 / (1 + threshold)).
    Faster,
    /// B's median time exceeds A's by more than the threshold.
    Regression,
    /// B produced wrong elements.
    Wrong,
    /// A time is not defined in one of the runs.
    Undefined,
}

impl Status {
    /// Whether it counts against B (exit 1).
    pub fn is_regression(self) -> bool {
        matches!(self, Status::Regression | Status::Wrong)
    }
}

/// One matched pair.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointDiff {
    pub label: String,
    pub op: Op,
    pub algo: Algo,
    /// The NCCL protocol of both points; absent for backends without protocols.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proto: Option<Proto>,
    pub dtype: DType,
    pub world: usize,
    pub bytes: usize,
    pub in_place: bool,
    /// The root of a rooted op; absent for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<usize>,
    pub time_us_a: f64,
    pub time_us_b: f64,
    /// time_us_b / time_us_a (null when not defined).
    pub time_ratio: Option<f64>,
    pub busbw_gbps_a: f64,
    pub busbw_gbps_b: f64,
    /// busbw_gbps_b / busbw_gbps_a (null when not defined).
    pub busbw_ratio: Option<f64>,
    pub wrong_a: u64,
    pub wrong_b: u64,
    /// The Mann-Whitney U test's two-sided p-value of A's and B's per-iteration samples; null
    /// where a side has fewer than 5 (an imported log's one average).
    pub p_value: Option<f64>,
    pub status: Status,
}

/// When a difference counts: beyond `threshold` (a fraction of A's time), beyond `min_diff_us`
/// in absolute terms, and significant at `alpha` (p at most alpha; 1 leaves the test out)
/// where both sides have samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rule {
    pub threshold: f64,
    pub min_diff_us: f64,
    pub alpha: f64,
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub schema: String,
    pub a: String,
    pub b: String,
    /// Fraction: 0.05 is 5%.
    pub threshold: f64,
    /// The absolute floor of a difference that counts, µs.
    pub min_diff_us: f64,
    /// The significance level of the rank test.
    pub alpha: f64,
    pub points: Vec<PointDiff>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    pub regressions: usize,
    pub faster: usize,
    pub notes: Vec<String>,
}

/// Matches the points of `a` and `b` and judges every pair (paths are filled in by the caller).
pub fn compare(a: &[MeasuredPoint], b: &[MeasuredPoint], rule: &Rule) -> Comparison {
    let mut notes = Vec::new();
    let ma = index(a, "A", &mut notes);
    let mb = index(b, "B", &mut notes);
    let points: Vec<PointDiff> = ma
        .iter()
        .filter_map(|(k, pa)| {
            let key = MatchKey::of(&pa.record);
            mb.get(k).map(|pb| pair(&key, pa, pb, rule))
        })
        .collect();
    type Index<'a> = BTreeMap<MatchKey, &'a MeasuredPoint>;
    let only = |x: &Index, y: &Index| {
        x.iter()
            .filter(|(k, _)| !y.contains_key(k))
            .map(|(_, p)| MatchKey::of(&p.record).label())
            .collect::<Vec<_>>()
    };
    let count = |f: fn(Status) -> bool| points.iter().filter(|p| f(p.status)).count();
    Comparison {
        schema: COMPARE_SCHEMA.into(),
        a: String::new(),
        b: String::new(),
        threshold: rule.threshold,
        min_diff_us: rule.min_diff_us,
        alpha: rule.alpha,
        only_in_a: only(&ma, &mb),
        only_in_b: only(&mb, &ma),
        regressions: count(Status::is_regression),
        faster: count(|s| s == Status::Faster),
        points,
        notes,
    }
}

/// The points of one run by key; a repeated key keeps its first row, with a note. A soak's
/// later cycles repeat every key: its first cycle is compared, said once.
fn index<'a>(
    rows: &'a [MeasuredPoint],
    side: &str,
    notes: &mut Vec<String>,
) -> BTreeMap<MatchKey, &'a MeasuredPoint> {
    let mut m = BTreeMap::new();
    let first = rows.iter().map(|r| r.record.cycle).min().unwrap_or(0);
    let cycles = rows.iter().map(|r| r.record.cycle).max().unwrap_or(0) - first + 1;
    if cycles > 1 {
        notes.push(format!(
            "{side} is a soak of {cycles} cycles: its first cycle is compared (collbench report \
             shows every point's drift over the cycles)"
        ));
    }
    for r in rows.iter().filter(|r| r.record.cycle == first) {
        let k = MatchKey::of(&r.record);
        let label = k.label();
        if let std::collections::btree_map::Entry::Vacant(e) = m.entry(k.matching()) {
            e.insert(r);
        } else {
            notes.push(format!("{side} has {label} twice; the first row is used"));
        }
    }
    m
}

fn ratio(b: f64, a: f64) -> Option<f64> {
    let r = b / a;
    (a > 0.0 && r.is_finite()).then_some(r)
}

/// The times and bandwidths a pair is judged on: medians; where one side has no median, loop
/// times where both have one, else means, on both sides alike.
fn compared(a: &PointRecord, b: &PointRecord) -> [f64; 4] {
    if let (false, Some(la), Some(lb)) = (
        a.has_samples() && b.has_samples(),
        a.loop_time_us,
        b.loop_time_us,
    ) {
        let bus = |r: &PointRecord| r.loop_busbw_gbps().unwrap_or(f64::NAN);
        return [la, lb, bus(a), bus(b)];
    }
    if a.has_samples() && b.has_samples() {
        [
            a.time_us_median,
            b.time_us_median,
            a.busbw_gbps,
            b.busbw_gbps,
        ]
    } else {
        [
            a.time_us_mean,
            b.time_us_mean,
            a.busbw_gbps_mean,
            b.busbw_gbps_mean,
        ]
    }
}

fn pair(k: &MatchKey, pa: &MeasuredPoint, pb: &MeasuredPoint, rule: &Rule) -> PointDiff {
    let (a, b) = (&pa.record, &pb.record);
    let [time_a, time_b, busbw_a, busbw_b] = compared(a, b);
    let time_ratio = ratio(time_b, time_a);
    let p_value = mann_whitney_p(&pa.times(), &pb.times());
    // More than noise: beyond the absolute floor, and significant where there are samples.
    let counts =
        (time_b - time_a).abs() > rule.min_diff_us && p_value.map_or(true, |p| p <= rule.alpha);
    let status = match time_ratio {
        _ if b.wrong > 0 => Status::Wrong,
        None => Status::Undefined,
        Some(r) if r > 1.0 + rule.threshold && counts => Status::Regression,
        Some(r) if r < 1.0 / (1.0 + rule.threshold) && counts => Status::Faster,
        Some(_) => Status::Same,
    };
    PointDiff {
        label: k.label(),
        op: k.op,
        algo: k.algo,
        proto: k.proto,
        dtype: k.dtype,
        world: k.world,
        bytes: k.bytes,
        in_place: k.in_place,
        root: k.root,
        time_us_a: time_a,
        time_us_b: time_b,
        time_ratio,
        busbw_gbps_a: busbw_a,
        busbw_gbps_b: busbw_b,
        busbw_ratio: ratio(busbw_b, busbw_a),
        wrong_a: a.wrong,
        wrong_b: b.wrong,
        p_value,
        status,
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
