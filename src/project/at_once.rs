//! How much a layout's data-parallel collectives slow because its DP groups run at once. With
//! tensor parallelism `tp` > 1 a stage holds `tp` DP groups (ranks `i, i + tp, i + 2·tp, ...`),
//! which gather and reduce-scatter at the same time over the same nodes' links and NICs: the
//! groups of nccl-tests' `NCCL_TESTS_SPLIT="MOD tp"` (`sweep --split %tp`). The fit's models
//! are of one group alone; where its runs also measured a split into such groups (a `MOD` or
//! `AND` rule: every group takes ranks from across the world, as DP groups do), its slowdowns
//! scale the DP collectives of every layout with `tp` > 1.

use serde::Serialize;

use super::overlap::median_slowdown;
use crate::collective::Op;
use crate::fit::schema::{FitFile, SlowdownCurve};

/// The data-parallel collectives' time at once over their time alone (1: unslowed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DpAtOnce {
    /// FSDP's AllGathers.
    pub gather: f64,
    /// FSDP's ReduceScatters (and hybrid sharding's AllReduce across nodes).
    pub reduce: f64,
}

impl Default for DpAtOnce {
    fn default() -> Self {
        DpAtOnce {
            gather: 1.0,
            reduce: 1.0,
        }
    }
}

/// The fit's slowdowns of DP-like groups at once, and what they were taken from.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredAtOnce {
    pub factors: DpAtOnce,
    /// The splits measured (summary.csv's `concurrent`: `split %8 of 64`), comma separated.
    pub splits: String,
    /// Sizes the medians are taken over.
    pub sizes: usize,
}

/// Whether a split's groups each take ranks from across the world (a colour from the rank's
/// low bits: `MOD`, `AND`), as a layout's DP groups do; `DIV` and `OR` make groups of
/// neighbours, as TP groups are.
fn across(curve: &SlowdownCurve) -> bool {
    ["split %", "split &"]
        .iter()
        .any(|p| curve.concurrent.starts_with(p))
}

/// The medians (at least 1) over every size of the AllGather's and the ReduceScatter's
/// slowdowns in DP-like groups at once; an op the fit lacks takes the other's. `None` where it
/// measured neither.
pub fn measured(fit: &FitFile) -> Option<MeasuredAtOnce> {
    let curves: Vec<&SlowdownCurve> = fit.slowdowns.iter().filter(|c| across(c)).collect();
    let of = |op: Op| -> Vec<f64> {
        (curves.iter().filter(|c| c.op == op))
            .flat_map(|c| c.points.iter().map(|p| p.slowdown_median))
            .filter(|s| s.is_finite())
            .collect()
    };
    let (gather, reduce) = (of(Op::AllGather), of(Op::ReduceScatter));
    let sizes = gather.len() + reduce.len();
    let (g, r) = (median_slowdown(gather), median_slowdown(reduce));
    let factors = DpAtOnce {
        gather: g.or(r)?,
        reduce: r.or(g)?,
    };
    let mut splits: Vec<&str> = (curves.iter())
        .filter(|c| matches!(c.op, Op::AllGather | Op::ReduceScatter))
        .map(|c| c.concurrent.as_str())
        .collect();
    splits.sort_unstable();
    splits.dedup();
    Some(MeasuredAtOnce {
        factors,
        splits: splits.join(", "),
        sizes,
    })
}

/// A TP AllReduce's and the DP collectives' slowdowns at once with each other (1: unslowed),
/// from `sweep --concurrent` runs of an AllReduce in groups of neighbours beside an AllGather
/// or a ReduceScatter in groups across the world (`allreduce@/8,reducescatter@%8`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TpBesideDp {
    /// The AllReduce beside a DP collective.
    pub allreduce: f64,
    /// The AllGather beside the AllReduce.
    pub gather: f64,
    /// The ReduceScatter beside the AllReduce.
    pub reduce: f64,
}

/// The fit's TP-beside-DP slowdowns, and what they were taken from.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredTpBeside {
    pub factors: TpBesideDp,
    /// The `--concurrent` runs measured (summary.csv's `concurrent`), comma separated.
    pub runs: String,
    /// Slowdowns the medians are taken over.
    pub sizes: usize,
}

/// Whether calls at once are exactly two: a TP AllReduce (groups of neighbours: `/`) beside a
/// DP AllGather or ReduceScatter (groups across the world: `%`, `&`), summary.csv's
/// `allreduce@/8 + reducescatter@%8 of 64`.
fn tp_beside_dp(concurrent: &str) -> bool {
    let calls = concurrent
        .rsplit_once(" of ")
        .map_or(concurrent, |(c, _)| c);
    let Some((one, other)) = calls.split_once(" + ") else {
        return false;
    };
    let dp = |c: &str| {
        let (op, rule) = c.split_once('@').unwrap_or(("", ""));
        ["allgather", "reducescatter"].contains(&op) && rule.starts_with(['%', '&'])
    };
    let tp = |c: &str| c.starts_with("allreduce@/");
    (tp(one) && dp(other)) || (dp(one) && tp(other))
}

impl TpBesideDp {
    /// These slowdowns with the DP groups' own at once taken out: a DP call beside the TP
    /// AllReduces was measured against its group alone, with the other DP groups beside it
    /// too, which `dp` already counts (`sweep --split`); at least 1.
    pub fn beyond(self, dp: DpAtOnce) -> TpBesideDp {
        TpBesideDp {
            gather: (self.gather / dp.gather).max(1.0),
            reduce: (self.reduce / dp.reduce).max(1.0),
            ..self
        }
    }
}

/// The medians (at least 1) over every size of the AllReduce's, the AllGather's and the
/// ReduceScatter's slowdowns where TP's AllReduce ran beside DP's collectives; a DP op the fit
/// lacks takes the other's. `None` without the AllReduce's or either DP op's.
pub fn measured_tp_beside(fit: &FitFile) -> Option<MeasuredTpBeside> {
    let curves: Vec<&SlowdownCurve> = (fit.slowdowns.iter())
        .filter(|c| tp_beside_dp(&c.concurrent))
        .collect();
    let of = |op: Op| -> Vec<f64> {
        (curves.iter().filter(|c| c.op == op))
            .flat_map(|c| c.points.iter().map(|p| p.slowdown_median))
            .filter(|s| s.is_finite())
            .collect()
    };
    let (ar, g, r) = (of(Op::AllReduce), of(Op::AllGather), of(Op::ReduceScatter));
    let sizes = ar.len() + g.len() + r.len();
    let (ar, g, r) = (median_slowdown(ar), median_slowdown(g), median_slowdown(r));
    let factors = TpBesideDp {
        allreduce: ar?,
        gather: g.or(r)?,
        reduce: r.or(g)?,
    };
    let mut runs: Vec<&str> = curves.iter().map(|c| c.concurrent.as_str()).collect();
    runs.sort_unstable();
    runs.dedup();
    Some(MeasuredTpBeside {
        factors,
        runs: runs.join(", "),
        sizes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::slowdowns::test_curve;

    /// A curve of `op` beside `concurrent`, its slowdowns at 1 KiB, 2 KiB, ...
    fn curve(op: Op, concurrent: &str, slowdowns: &[f64]) -> SlowdownCurve {
        let at: Vec<_> = (slowdowns.iter().enumerate())
            .map(|(i, &s)| (1 << (10 + i), s, None))
            .collect();
        SlowdownCurve {
            op,
            ..test_curve(concurrent, &at)
        }
    }

    #[test]
    fn groups_across_the_world_slow_each_op_and_one_stands_in_for_the_other() {
        let mut fit = crate::fit::export::testfit::ring_fit();
        assert_eq!(measured(&fit), None);
        fit.slowdowns = vec![
            curve(Op::ReduceScatter, "split %2 of 4", &[1.5, 2.5, 2.0]),
            curve(Op::ReduceScatter, "split /2 of 4", &[9.0]),
            curve(Op::AllReduce, "split %2 of 4", &[9.0]),
            curve(Op::AllGather, "compute cache", &[9.0]),
        ];
        let m = measured(&fit).unwrap();
        assert_eq!(
            (m.factors, m.splits.as_str(), m.sizes),
            (
                DpAtOnce {
                    gather: 2.0,
                    reduce: 2.0
                },
                "split %2 of 4",
                3
            )
        );
        fit.slowdowns
            .push(curve(Op::AllGather, "split &1 of 4", &[0.9, 0.8]));
        let m = measured(&fit).unwrap();
        assert_eq!((m.factors.gather, m.factors.reduce), (1.0, 2.0));
        assert_eq!(m.splits, "split %2 of 4, split &1 of 4");
        fit.slowdowns.retain(|c| c.op == Op::AllReduce);
        assert_eq!(measured(&fit), None);
    }

    #[test]
    fn tp_allreduce_beside_dp_collectives_only_from_their_own_runs() {
        let mut fit = crate::fit::export::testfit::ring_fit();
        let label = "allreduce@/2 + reducescatter@%2 of 4";
        fit.slowdowns = vec![
            curve(Op::AllReduce, label, &[1.2, 1.6, 1.4]),
            curve(Op::ReduceScatter, label, &[2.0, 0.5]),
            // Not TP beside DP: neighbours beside neighbours, a third call beside, a split.
            curve(Op::AllReduce, "allreduce@/2 + allgather@/2 of 4", &[9.0]),
            curve(
                Op::AllReduce,
                "allreduce@/2 + allgather@/2 + reducescatter@%2 of 4",
                &[9.0],
            ),
            curve(Op::AllGather, "split %2 of 4", &[9.0]),
        ];
        let m = measured_tp_beside(&fit).unwrap();
        assert_eq!(
            (m.factors, m.runs.as_str(), m.sizes),
            (
                TpBesideDp {
                    allreduce: 1.4,
                    gather: 1.25,
                    reduce: 1.25
                },
                label,
                5
            )
        );
        // Beside a fit's DP groups at once, x1.25 of them: only what the AllReduce adds.
        let at_once = DpAtOnce {
            gather: 1.25,
            reduce: 2.0,
        };
        let beyond = m.factors.beyond(at_once);
        assert_eq!(
            (beyond.allreduce, beyond.gather, beyond.reduce),
            (1.4, 1.0, 1.0)
        );
        assert!(tp_beside_dp("reducescatter@&1 + allreduce@/2 of 4"));
        assert!(!tp_beside_dp("allreduce@%2 + reducescatter@/2 of 4"));
        fit.slowdowns.retain(|c| c.op != Op::AllReduce);
        assert_eq!(measured_tp_beside(&fit), None);
    }
}
