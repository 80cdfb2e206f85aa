//! Grouping the points of results folders into curves: the per-iteration samples of every
//! measured point, keyed by what a fit keys on (backend, op, algo, dtype, world, nodes,
//! placement, protocol).

use std::collections::{BTreeMap, BTreeSet};

use crate::collective::ReduceOp;
use crate::error::{Error, Result};
use crate::report::run_reader::{MeasuredPoint, Run};
use crate::report::summary_csv::SUMMARY_FILE;

use super::schema::CurveKey;

/// The samples of one curve, from every run that measured it: size in bytes → times (µs).
pub type Curve = BTreeMap<usize, Vec<f64>>;

/// What the runs hold, grouped into curves, plus notes on points left out.
#[derive(Debug, Default)]
pub struct Curves {
    pub curves: BTreeMap<CurveKey, Curve>,
    pub notes: Vec<String>,
}

/// Groups the usable points of `runs` into curves. Points with wrong results or without samples
/// are left out, each with a note: a fit must not learn from a broken measurement. A run
/// imported from a log that holds one average per size gives that average as the size's one
/// observation: no samples are invented, and each size weighs as one. A curve takes one
/// reduction (fit.json has no reduction key): sum where it was measured, else the first of
/// nccl-tests' order; the others are left out with one note each.
pub fn group_curves(runs: &[Run]) -> Curves {
    let mut out = Curves::default();
    let fitted = fitted_redops(runs);
    let mut left_out = BTreeSet::new();
    for run in runs {
        let averages_only = run
            .meta
            .import
            .as_ref()
            .is_some_and(|i| !i.per_iteration_samples);
        if averages_only && !run.points.is_empty() {
            out.notes.push(format!(
                "{}: imported from a log that prints one average per size, no per-iteration \
                 samples: each size is fitted as one observation (its average)",
                run.dir.display()
            ));
        }
        for p in &run.points {
            let k = &p.record.key;
            let what = || {
                format!(
                    "{}: {} {} {} world {} {} B",
                    run.dir.display(),
                    k.op,
                    super::schema::algo_label(k.algo, k.proto),
                    k.dtype,
                    k.world,
                    k.bytes
                )
            };
            if k.concurrent.is_some() {
                continue; // kept as a slowdown: [`concurrent_note`]
            }
            if fitted.get(&curve_key(p)) != Some(&k.redop) {
                left_out.insert((k.op, k.redop));
                continue;
            }
            if p.record.wrong > 0 {
                out.notes.push(format!(
                    "{}: left out, {} wrong elements",
                    what(),
                    p.record.wrong
                ));
                continue;
            }
            let average = [p.record.time_us_mean];
            let times = p.times();
            let observed: &[f64] = match (times.is_empty(), averages_only) {
                (false, _) => &times,
                (true, true) => &average,
                (true, false) => {
                    out.notes
                        .push(format!("{}: left out, no samples in samples.csv", what()));
                    continue;
                }
            };
            out.curves
                .entry(curve_key(p))
                .or_default()
                .entry(k.bytes)
                .or_default()
                .extend_from_slice(observed);
        }
    }
    out.notes.extend(concurrent_note(runs));
    for (op, redop) in left_out {
        out.notes.push(format!(
            "{op} with --redop {redop}: left out, a fit takes one reduction per curve (fit a \
             run of {redop} alone for its model)"
        ));
    }
    out
}

/// A call beside others is no point of its curve: fit.json keeps its slowdown instead
/// (`slowdowns`); one note counts them.
fn concurrent_note(runs: &[Run]) -> Option<String> {
    let points = runs.iter().flat_map(|r| &r.points);
    let n = points.filter(|p| p.record.key.concurrent.is_some()).count();
    (n > 0).then(|| {
        format!(
            "{n} points measured beside other calls or a compute load (sweep --split, \
             --with-compute) are kept as slowdowns, not fitted"
        )
    })
}

/// The reduction each curve is fitted with: the smallest in nccl-tests' order (sum first).
fn fitted_redops(runs: &[Run]) -> BTreeMap<CurveKey, ReduceOp> {
    let mut fitted: BTreeMap<CurveKey, ReduceOp> = BTreeMap::new();
    for p in runs.iter().flat_map(|r| &r.points) {
        let redop = p.record.key.redop;
        let e = fitted.entry(curve_key(p)).or_insert(redop);
        *e = (*e).min(redop);
    }
    fitted
}

/// Refuses runs whose summary.csv holds no point at all (a sweep that stopped before its first
/// point), naming the folder.
pub fn require_points(runs: &[Run]) -> Result<()> {
    match runs.iter().find(|r| r.points.is_empty()) {
        Some(r) => Err(Error::Input {
            path: r.dir.join(SUMMARY_FILE),
            msg: "no measured points; nothing to fit".into(),
        }),
        None => Ok(()),
    }
}

/// The curve `point` belongs to.
fn curve_key(point: &MeasuredPoint) -> CurveKey {
    let k = &point.record.key;
    CurveKey {
        backend: k.backend.clone(),
        op: k.op,
        algo: k.algo,
        dtype: k.dtype,
        world: k.world,
        nodes: k.nodes.max(1),
        in_place: k.in_place,
        proto: k.proto,
        comm: k.comm,
        traffic: k.traffic.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::testrun::{run, Truth};

    /// A run of sum and prod points of the same curve: the sum is fitted, the product left out
    /// with one note; a curve measured only with prod is fitted with prod.
    #[test]
    fn a_curve_takes_one_reduction_sum_first() {
        let truth = Truth {
            proto: None,
            alpha_us: 5.0,
            beta_ns_per_byte: 0.5,
        };
        let mut mixed = run(&[truth], &[2]);
        let slower: Vec<MeasuredPoint> = (mixed.points.iter())
            .map(|p| {
                MeasuredPoint::with_times(p.record.clone().with_redop(ReduceOp::Prod), &[1e6; 5])
            })
            .collect();
        mixed.points.extend(slower);
        let grouped = group_curves(std::slice::from_ref(&mixed));
        let (_, curve) = grouped.curves.iter().next().unwrap();
        assert!(curve.values().flatten().all(|&t| t < 1e6), "{curve:?}");
        assert_eq!(grouped.notes.len(), 1, "{:?}", grouped.notes);
        assert!(grouped.notes[0].starts_with("allreduce with --redop prod: left out"));
        mixed
            .points
            .retain(|p| p.record.key.redop == ReduceOp::Prod);
        let only_prod = group_curves(&[mixed]);
        assert_eq!(only_prod.curves.len(), 1);
        assert!(only_prod.notes.is_empty(), "{:?}", only_prod.notes);
    }
}
