//! The points of a `--concurrent`: per world, dtype, reduction, placement and size, every
//! entry's groups each alone, then every entry's call at once on all its groups, right after,
//! so that each call beside the others follows the same call alone.

use std::sync::Arc;

use crate::collective::{Algo, DType, Op, ReduceOp, Shape};
use crate::model::call::{BackendKind, Call};
use crate::model::concurrent::{Concurrent, ConcurrentGroups};
use crate::units::format_size;

use super::{default_iters, default_warmup, Beside, Plan, Point, PointSplit, Roots, SweepOptions};

/// What every call of one concurrent point shares.
#[derive(Clone, Copy)]
struct Shared {
    algo: Algo,
    dtype: DType,
    redop: ReduceOp,
    in_place: bool,
    root: usize,
}

impl SweepOptions {
    /// Adds the points of `c` to `plan`, with a note for every world, placement or size it
    /// cannot measure.
    pub(super) fn plan_concurrent(&self, backend: BackendKind, c: &Concurrent, plan: &mut Plan) {
        let Some(algo) = self.concurrent_algo(backend, c, &mut plan.notes) else {
            return;
        };
        let reduces = c.0.iter().any(|e| e.op.reduces());
        let redops = if reduces {
            self.redops.clone()
        } else {
            vec![ReduceOp::Sum]
        };
        let root = match self.root {
            Roots::Rank(r) => r,
            Roots::All => 0,
        };
        for (whole, _) in self.groups() {
            let world = whole.world();
            let at = match c.at(world) {
                Ok(at) => Arc::new(at),
                Err(why) => {
                    plan.notes.push(format!("{why}; world {world} skipped"));
                    continue;
                }
            };
            for (&dtype, &redop) in
                (self.dtypes.iter()).flat_map(|d| redops.iter().map(move |r| (d, r)))
            {
                if let Some(why) = refused(backend, &at, dtype, redop) {
                    plan.notes.push(format!("{why}; skipped"));
                    continue;
                }
                for &in_place in &self.in_place {
                    if let Some(op) =
                        c.0.iter()
                            .map(|e| e.op)
                            .find(|&op| in_place && backend.no_in_place(op).is_some())
                    {
                        plan.notes.push(format!(
                            "--concurrent {c}: {op} is not measured in place on the {backend} backend; in place skipped"
                        ));
                        continue;
                    }
                    let shared = Shared {
                        algo,
                        dtype,
                        redop,
                        in_place,
                        root,
                    };
                    self.concurrent_sizes(plan, &at, shared);
                }
            }
        }
    }

    /// The one algorithm every entry runs: the first asked for that every entry's op has.
    fn concurrent_algo(
        &self,
        backend: BackendKind,
        c: &Concurrent,
        notes: &mut Vec<String>,
    ) -> Option<Algo> {
        let every = |a: &&Algo| c.0.iter().all(|e| backend.algos(e.op).contains(a));
        let found = self.algos.iter().find(every).copied();
        if found.is_none() {
            notes.push(format!(
                "--concurrent {c}: no requested algorithm runs every entry's op on the {backend} \
                 backend; nothing measured"
            ));
        }
        found
    }

    /// Every size of one (dtype, reduction, placement) at one world.
    fn concurrent_sizes(&self, plan: &mut Plan, at: &Arc<ConcurrentGroups>, shared: Shared) {
        let mut last = None;
        for &requested in &self.sizes {
            let calls: Vec<Point> = (at.entries.iter())
                .map(|(op, groups)| self.entry_point(*op, groups, shared, requested))
                .collect();
            if let Some(c) = calls.iter().find(|c| c.call.shape.bytes == 0) {
                plan.notes.push(format!(
                    "--concurrent {}: {} holds too little for {} at world {}; size skipped",
                    at.label,
                    format_size(requested),
                    c.call.op,
                    c.world
                ));
                continue;
            }
            let bytes: Vec<usize> = calls.iter().map(|c| c.call.shape.bytes).collect();
            if last.as_ref() == Some(&bytes) {
                continue;
            }
            last = Some(bytes);
            // Every call of the point runs the same iterations: those of the largest.
            let largest = calls.iter().map(|c| c.call.shape.bytes).max().unwrap_or(0);
            let iters = self.iters.unwrap_or_else(|| default_iters(largest));
            let warmup = self.warmup.unwrap_or_else(|| default_warmup(iters));
            let calls: Vec<Point> = (calls.into_iter())
                .map(|c| Point { iters, warmup, ..c })
                .collect();
            push_concurrent(plan, at, calls);
        }
    }

    /// One entry's point at `requested` bytes: its op on all its groups at once.
    fn entry_point(
        &self,
        op: Op,
        groups: &Arc<crate::model::split::SplitGroups>,
        s: Shared,
        requested: usize,
    ) -> Point {
        let world = groups.size();
        let call = Call {
            op,
            algo: s.algo,
            dtype: s.dtype,
            redop: if op.reduces() { s.redop } else { ReduceOp::Sum },
            shape: Shape::new(op, s.dtype, requested, world),
            root: if op.rooted() { s.root } else { 0 },
        };
        Point {
            call,
            world,
            nodes: 1,
            pair: None,
            in_place: s.in_place,
            requested,
            iters: 0,
            warmup: 0,
            timing: self.loop_timing,
            cycle: 0,
            traffic: None,
            split: Some(PointSplit {
                split: groups.clone(),
                alone: None,
                beside: None,
            }),
            compute: None,
        }
    }
}

/// Why the backend cannot run one of the entries in `dtype` and `redop`, if it cannot.
fn refused(
    backend: BackendKind,
    at: &ConcurrentGroups,
    dtype: DType,
    redop: ReduceOp,
) -> Option<String> {
    at.entries.iter().find_map(|(op, groups)| {
        let redop = if op.reduces() { redop } else { ReduceOp::Sum };
        let world = groups.size();
        let why = backend.refuses_at(*op, dtype, redop, world)?;
        Some(format!(
            "--concurrent {}: {op} {dtype} {redop} at world {world}: {why}",
            at.label
        ))
    })
}

/// Every group of every call alone, then all the calls at once (the first call's point
/// carrying them all). The points alone carry them too, so that a backend makes their calls
/// as it makes them at once (MPI: started, then waited on).
fn push_concurrent(plan: &mut Plan, at: &Arc<ConcurrentGroups>, calls: Vec<Point>) {
    let beside = Arc::new(Beside {
        label: at.label.clone(),
        calls,
    });
    for call in &beside.calls {
        let Some(split) = &call.split else { continue };
        for i in 0..split.split.groups.len() {
            let mut alone = call.clone();
            alone.split = Some(PointSplit {
                alone: Some(i),
                beside: Some(beside.clone()),
                ..split.clone()
            });
            plan.points.push(alone);
        }
    }
    let Some(mut together) = beside.calls.first().cloned() else {
        return;
    };
    if let Some(split) = together.split.as_mut() {
        split.beside = Some(beside);
    }
    plan.points.push(together);
}
