//! The options checked and expanded into points: every group, op, algorithm, dtype and placement,
//! then the sizes of one curve, with a note for each size skipped or rounded.

use std::sync::Arc;

use crate::collective::traffic_spec::TrafficSource;
use crate::collective::uneven;
use crate::collective::{Algo, DType, Layout, Op, ReduceOp, Shape};
use crate::error::Result;
use crate::model::call::{BackendKind, Call};
use crate::model::split::SplitGroups;
use crate::model::topology::WorldShape;
use crate::units::format_size;

use super::expand_split::push_point;
use super::{default_iters, default_warmup, Plan, Point, PointTraffic, SweepOptions};

impl SweepOptions {
    /// The groups measured: `shapes` when set, else each world size on one host.
    pub fn world_shapes(&self) -> Vec<WorldShape> {
        if !self.shapes.is_empty() {
            return self.shapes.clone();
        }
        self.world_sizes
            .iter()
            .map(|&p| WorldShape {
                nodes: 1,
                per_node: p,
            })
            .collect()
    }

    /// Every group measured, with its node pair in a `--pairs` run.
    pub(super) fn groups(&self) -> Vec<(WorldShape, Option<(usize, usize)>)> {
        if !self.pairs.is_empty() {
            let two = WorldShape {
                nodes: 2,
                per_node: 1,
            };
            return self.pairs.iter().map(|&p| (two, Some(p))).collect();
        }
        self.world_shapes().into_iter().map(|s| (s, None)).collect()
    }

    /// Expands the options into points, in the order they are measured: world, op, algo, dtype,
    /// reduction, placement, then size (so one curve is measured in one go).
    pub fn plan(&self) -> Plan {
        self.plan_for(BackendKind::Host)
    }

    /// [`SweepOptions::plan`] with the algorithms of `backend`.
    pub fn plan_for(&self, backend: BackendKind) -> Plan {
        let mut plan = Plan {
            points: Vec::new(),
            notes: Vec::new(),
            soak: self.soak,
        };
        if let Some(c) = &self.concurrent {
            self.plan_concurrent(backend, c, &mut plan);
            self.soak_note(&mut plan);
            return plan;
        }
        for (whole, pair) in self.groups() {
            let Some((shape, split)) = self.split_noted(whole, &mut plan.notes) else {
                continue;
            };
            for &op in &self.ops {
                if !op.runs_at(shape.world()) {
                    plan.notes.push(format!(
                        "{op} at world {}: runs at powers of two only (as nccl-tests); skipped",
                        shape.world()
                    ));
                    continue;
                }
                let traffic = match self.traffic_at(op, shape.world()) {
                    Ok(t) => t,
                    Err(why) => {
                        plan.notes
                            .push(format!("{op} at world {}: {why}; skipped", shape.world()));
                        continue;
                    }
                };
                for &algo in self
                    .algos
                    .iter()
                    .filter(|a| self.measures(backend, op, **a))
                {
                    for (dtype, redop) in self.elements_of(op) {
                        let world = shape.world();
                        if let Some(why) = backend.refuses_at(op, dtype, redop, world) {
                            plan.notes.push(format!(
                                "{op} {dtype} {redop} at world {world}: {why}; skipped"
                            ));
                            continue;
                        }
                        for &in_place in &self.in_place {
                            if in_place && backend.no_in_place(op).is_some() {
                                continue;
                            }
                            for root in self.roots_of(op, shape.world()) {
                                let curve = Curve {
                                    op,
                                    algo,
                                    dtype,
                                    redop,
                                    in_place,
                                    root,
                                };
                                let group = (shape, pair, split.as_ref());
                                self.plan_curve(&mut plan, group, curve, traffic.as_ref());
                            }
                        }
                    }
                }
            }
        }
        for op in &self.ops {
            let missing = self.algos.iter().find(|a| !backend.algos(*op).contains(a));
            if let (Some(a), false) = (missing, self.default_algos) {
                plan.notes.push(format!(
                    "{op} has no {a} algorithm on the {backend} backend; skipped"
                ));
            }
            if let Some(why) = backend
                .no_in_place(*op)
                .filter(|_| self.in_place.contains(&true))
            {
                plan.notes.push(format!(
                    "{op} in place is not measured on the {backend} backend: {why}; skipped"
                ));
            }
        }
        self.soak_note(&mut plan);
        plan
    }

    fn soak_note(&self, plan: &mut Plan) {
        if self.soak.is_soak() && !plan.points.is_empty() {
            plan.notes.push(format!(
                "soak: the plan's {} points, {}",
                plan.points.len(),
                self.soak.describe()
            ));
        }
    }

    /// Whether `op` is measured with `algo` on `backend`: an algorithm it has, and with
    /// [`SweepOptions::default_algos`] its first one only.
    fn measures(&self, backend: BackendKind, op: Op, algo: Algo) -> bool {
        let algos = backend.algos(op);
        match self.default_algos {
            true => algos.first() == Some(&algo),
            false => algos.contains(&algo),
        }
    }

    /// The (dtype, reduction) pairs `op` is measured with: every reduction where it reduces,
    /// sum alone (never applied) where it does not.
    fn elements_of(&self, op: Op) -> Vec<(DType, ReduceOp)> {
        let redops = match op.reduces() {
            true => &self.redops[..],
            false => &[ReduceOp::Sum][..],
        };
        let pairs = self
            .dtypes
            .iter()
            .flat_map(|&d| redops.iter().map(move |&r| (d, r)));
        pairs.collect()
    }

    /// The roots a curve of `op` is measured with in a group of `world` ranks (0 alone for
    /// the ops without a root).
    fn roots_of(&self, op: Op, world: usize) -> Vec<usize> {
        match op.rooted() {
            true => self.root.in_group(world),
            false => vec![0],
        }
    }

    /// The traffic of `op` at `world` ranks where it is an alltoallv (nccl-tests' spread 1
    /// where `--traffic` was not given), or why its pattern cannot describe them.
    fn traffic_at(&self, op: Op, world: usize) -> Result<Option<PointTraffic>, String> {
        if op.layout() != Layout::Uneven {
            return Ok(None);
        }
        let source = (self.traffic.clone()).unwrap_or_else(TrafficSource::nccl_tests_default);
        let traffic = Arc::new(source.at(world)?);
        Ok(Some(PointTraffic {
            label: source.label,
            traffic,
        }))
    }

    fn plan_curve(
        &self,
        plan: &mut Plan,
        (group, pair, split): CurveGroup<'_>,
        curve: Curve,
        traffic: Option<&PointTraffic>,
    ) {
        let Curve {
            op,
            algo,
            dtype,
            redop,
            in_place,
            root,
        } = curve;
        let world = group.world();
        let mut last = None;
        if let Some(t) = traffic {
            let first = self.sizes.first().copied().unwrap_or(0);
            let note = uneven_note((op, dtype, world), t, first);
            // One per (dtype, world): the algorithms and placements share it.
            if !plan.notes.contains(&note) {
                plan.notes.push(note);
            }
        }
        for &requested in &self.sizes {
            let shape = match traffic {
                Some(t) => uneven::shape(&t.traffic, dtype, requested, world),
                None => Shape::new(op, dtype, requested, world),
            };
            if shape.bytes == 0 && traffic.is_some_and(|t| !t.traffic.sweeps()) {
                // The matrix's size is every size's: said once, in the note above.
                break;
            }
            if shape.bytes == 0 {
                let per = match op.splits_per_rank() {
                    true => "one 16-byte block per rank (nccl-tests' rule)",
                    false => "one element",
                };
                plan.notes.push(format!(
                    "{op} {dtype} at world {world}: {} holds less than {per}; skipped",
                    format_size(requested)
                ));
                continue;
            }
            if last == Some(shape.bytes) {
                continue;
            }
            if shape.bytes != requested && traffic.is_none() {
                let (from, to) = distinct_sizes(requested, shape.bytes);
                let unit = match op.splits_per_rank() {
                    true => "whole 16-byte blocks per rank, as nccl-tests",
                    false => "whole elements",
                };
                plan.notes.push(format!(
                    "{op} {dtype} at world {world}: {from} rounded down to {to} ({unit})"
                ));
            }
            last = Some(shape.bytes);
            let iters = self.iters.unwrap_or_else(|| default_iters(shape.bytes));
            let warmup = self.warmup.unwrap_or_else(|| default_warmup(iters));
            let call = Call {
                op,
                algo,
                dtype,
                redop,
                shape,
                root,
            };
            let point = Point {
                call,
                world,
                nodes: group.nodes,
                pair,
                in_place,
                requested,
                iters,
                warmup,
                timing: self.loop_timing,
                cycle: 0,
                traffic: traffic.cloned(),
                split: None,
                compute: None,
            };
            push_point(plan, point, split, self.with_compute);
        }
    }
}

/// What an alltoallv curve's sizes mean: a matrix fixes the one size it runs; a pattern that
/// sweeps sizes each size as nccl-tests' `size` column.
fn uneven_note((op, dtype, world): (Op, DType, usize), t: &PointTraffic, first: usize) -> String {
    let at = format!("{op} {dtype} at world {world}, traffic {}", t.label);
    match t.traffic.sweeps() {
        true => format!(
            "{at}: each size is the busiest rank's bytes, every peer's share of the size asked \
             rounded down to 16 bytes (nccl-tests' alltoallv size)"
        ),
        false => match uneven::shape(&t.traffic, dtype, first, world).bytes {
            0 => format!("{at}: the matrix sends nothing among these ranks; skipped"),
            bytes => format!(
                "{at}: the matrix fixes the size ({} for the busiest rank); one point, whatever \
                 the sizes asked",
                format_size(bytes)
            ),
        },
    }
}

/// The ranks a curve is measured on: its group's shape, its node pair in a `--pairs` run, and
/// its split's groups.
type CurveGroup<'a> = (
    WorldShape,
    Option<(usize, usize)>,
    Option<&'a Arc<SplitGroups>>,
);

/// What one curve of the plan fixes besides its group: every size is measured with it.
#[derive(Clone, Copy)]
struct Curve {
    op: Op,
    algo: Algo,
    dtype: DType,
    redop: ReduceOp,
    in_place: bool,
    root: usize,
}

/// Two sizes written so that they read differently: binary units, or exact bytes when the
/// units would round them to the same text.
pub(super) fn distinct_sizes(a: usize, b: usize) -> (String, String) {
    let (fa, fb) = (format_size(a), format_size(b));
    // A size with a fraction is rounded for reading (1048572 B is "1024.0 KiB"), which would
    // hide the very difference the note reports: both in bytes then.
    if fa == fb || fa.contains('.') || fb.contains('.') {
        (format!("{a} B"), format!("{b} B"))
    } else {
        (fa, fb)
    }
}
