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
    /// The slowdown at `bytes`: interpolated in log size between the measured sizes, the
    /// nearest end's outside them; `None` for a curve without points.
    pub fn at(&self, bytes: f64) -> Option<f64> {
        let p = &self.points;
        let (first, last) = (p.first()?, p.last()?);
        if bytes <= first.bytes as f64 {
            return Some(first.slowdown_median);
        }
        if bytes >= last.bytes as f64 {
            return Some(last.slowdown_median);
        }
        let i = p.iter().position(|q| q.bytes as f64 >= bytes)?;
        let (a, b) = (&p[i - 1], &p[i]);
        let x = |n: f64| n.max(1.0).ln();
        let t = (x(bytes) - x(a.bytes as f64)) / (x(b.bytes as f64) - x(a.bytes as f64));
        Some(a.slowdown_median + t * (b.slowdown_median - a.slowdown_median))
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    fn curve_of(points: &[(usize, f64)]) -> SlowdownCurve {
        SlowdownCurve {
            backend: "host".into(),
            op: Op::AllReduce,
            algo: Algo::Ring,
            dtype: DType::F32,
            redop: ReduceOp::Sum,
            world: 2,
            in_place: false,
            traffic: None,
            concurrent: "split %2 of 4".into(),
            points: (points.iter())
                .map(|&(bytes, s)| SlowdownPoint {
                    bytes,
                    slowdown_median: s,
                    slowdown_max: s,
                    aggregate_busbw_gbps: Some(1.0),
                    compute_slowdown_median: None,
                    groups: 2,
                })
                .collect(),
        }
    }

    #[test]
    fn slowdown_between_sizes_follows_log_size_and_holds_at_the_ends() {
        let c = curve_of(&[(1 << 10, 1.0), (1 << 20, 2.0)]);
        assert_eq!(c.at(1.0), Some(1.0));
        assert_eq!(c.at(1e12), Some(2.0));
        let mid = c.at(32768.0).unwrap();
        assert!((mid - 1.5).abs() < 1e-12, "{mid}");
        assert_eq!(curve_of(&[]).at(5.0), None);
        assert!(c.check("slowdowns[0]").is_ok());
        let bad = curve_of(&[(1, f64::NAN)]);
        assert!(bad
            .check("s")
            .unwrap_err()
            .contains("s.points[0].slowdown_median"));
    }
}
