//! fit.json's `slowdowns`: how much a call slows while other groups run theirs at the same time
//! (`sweep --split`) or a compute load runs beside it (`sweep --with-compute`), per size, kept
//! beside the lines. A slowdown is measured, not fitted: the call's median time beside the
//! others over its median alone, measured just before it; a size keeps the median over groups
//! and runs, the largest, the groups' summed busbw, and the compute load's own slowdown.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::collective::{Algo, DType, Op, ReduceOp};
use crate::physical::{self, WORLD};
use crate::report::run_reader::Run;
use crate::stats::median_of;

/// One call's slowdowns beside one set of concurrent groups.
#[derive(Clone, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct SlowdownCurve {
    pub backend: String,
    pub op: Op,
    pub algo: Algo,
    pub dtype: DType,
    pub redop: ReduceOp,
    /// Ranks in each group.
    pub world: usize,
    pub in_place: bool,
    /// An alltoallv's traffic (summary.csv's); absent for the other ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<String>,
    /// What ran at the same time (summary.csv's `concurrent`: `split %2`).
    pub concurrent: String,
    /// Sizes ascending.
    pub points: Vec<SlowdownPoint>,
}

/// The slowdown at one size.
#[derive(Clone, Debug, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct SlowdownPoint {
    pub bytes: usize,
    /// Median over the groups (and runs) of time together / time alone.
    pub slowdown_median: f64,
    /// The largest of them: the group the others slowed most.
    pub slowdown_max: f64,
    /// Median over runs of the groups' summed busbw at once; absent beside a compute load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_busbw_gbps: Option<f64>,
    /// Beside a compute load: the median of its slowdown (its rate alone over its rate beside
    /// the calls); absent elsewhere and where no rate could be taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_slowdown_median: Option<f64>,
    /// Groups measured (over all runs).
    pub groups: usize,
}

/// Each size's slowdowns, aggregate busbws and compute slowdowns, of one curve.
type Sizes = BTreeMap<usize, [Vec<f64>; 3]>;

/// Every slowdown the runs measured, by curve and size; points with wrong elements are left
/// out (their time is no call's).
pub fn collect(runs: &[Run]) -> Vec<SlowdownCurve> {
    // Curves without points, each with its sizes; few enough to search in turn.
    let mut by: Vec<(SlowdownCurve, Sizes)> = Vec::new();
    let points = runs.iter().flat_map(|r| &r.points).map(|p| &p.record);
    for r in points.filter(|r| r.wrong == 0) {
        let (k, Some(with), Some(s)) = (&r.key, &r.key.concurrent, r.slowdown) else {
            continue;
        };
        let head = SlowdownCurve {
            backend: k.backend.clone(),
            op: k.op,
            algo: k.algo,
            dtype: k.dtype,
            redop: k.redop,
            world: k.world,
            in_place: k.in_place,
            traffic: k.traffic.clone(),
            concurrent: with.clone(),
            points: Vec::new(),
        };
        let i = match by.iter().position(|(c, _)| *c == head) {
            Some(i) => i,
            None => {
                by.push((head, Sizes::new()));
                by.len() - 1
            }
        };
        let [slowdowns, aggregates, compute] = by[i].1.entry(k.bytes).or_default();
        slowdowns.push(s);
        aggregates.extend(r.aggregate_busbw_gbps);
        compute.extend(r.compute_slowdown);
    }
    let mut curves: Vec<SlowdownCurve> = by.into_iter().map(curve).collect();
    curves.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    curves
}

/// A curve's sizes summarized: the medians, the largest slowdown, the count.
fn curve((head, sizes): (SlowdownCurve, Sizes)) -> SlowdownCurve {
    let points = sizes
        .into_iter()
        .map(|(bytes, [mut s, mut a, mut c])| SlowdownPoint {
            bytes,
            slowdown_max: s.iter().copied().fold(f64::NAN, f64::max),
            slowdown_median: median_of(&mut s),
            aggregate_busbw_gbps: (!a.is_empty()).then(|| median_of(&mut a)),
            compute_slowdown_median: (!c.is_empty()).then(|| median_of(&mut c)),
            groups: s.len(),
        })
        .collect();
    SlowdownCurve { points, ..head }
}

impl SlowdownCurve {
    /// The first value outside its physical range, as `where: why`.
    pub fn check(&self, at: &str) -> Result<(), String> {
        WORLD.check_usize(&format!("{at}.world"), self.world)?;
        for (j, p) in self.points.iter().enumerate() {
            let at = format!("{at}.points[{j}]");
            physical::RATIO.check(&format!("{at}.slowdown_median"), p.slowdown_median)?;
            physical::RATIO.check(&format!("{at}.slowdown_max"), p.slowdown_max)?;
            if let Some(a) = p.aggregate_busbw_gbps {
                let agg = format!("{at}.aggregate_busbw_gbps");
                physical::MEASURED_GBPS_OR_ZERO.check(&agg, a)?;
            }
            if let Some(c) = p.compute_slowdown_median {
                physical::RATIO.check(&format!("{at}.compute_slowdown_median"), c)?;
            }
        }
        Ok(())
    }
}

/// A host curve of `concurrent` with `(bytes, slowdown, compute slowdown)` points, for tests.
#[cfg(test)]
pub(crate) fn test_curve(concurrent: &str, points: &[(usize, f64, Option<f64>)]) -> SlowdownCurve {
    SlowdownCurve {
        backend: "host".into(),
        op: Op::ReduceScatter,
        algo: Algo::Ring,
        dtype: DType::F32,
        redop: ReduceOp::Sum,
        world: 2,
        in_place: false,
        traffic: None,
        concurrent: concurrent.into(),
        points: (points.iter())
            .map(|&(bytes, s, c)| SlowdownPoint {
                bytes,
                slowdown_median: s,
                slowdown_max: s,
                aggregate_busbw_gbps: c.is_none().then_some(1.0),
                compute_slowdown_median: c,
                groups: 2,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_checked_and_the_bad_one_named() {
        let c = test_curve(
            "split %2 of 4",
            &[(1 << 10, 1.0, None), (1 << 20, 2.0, None)],
        );
        assert!(c.check("slowdowns[0]").is_ok());
        let bad = test_curve("split %2 of 4", &[(1, f64::NAN, None)]);
        assert!(bad
            .check("s")
            .unwrap_err()
            .contains("s.points[0].slowdown_median"));
        let bad = test_curve("compute cache", &[(1, 1.0, Some(-1.0))]);
        assert!(bad
            .check("s")
            .unwrap_err()
            .contains("s.points[0].compute_slowdown_median"));
    }
}
