//! The plan's `--split` and `--with-compute` points: the group every point of a world runs in
//! (one of the split's groups), and each point alone followed by the same point beside others.

use std::sync::Arc;

use crate::model::split::SplitGroups;
use crate::model::topology::WorldShape;

use super::{ComputeKind, Plan, Point, PointSplit, SweepOptions};

impl SweepOptions {
    /// The group every point of `whole` is measured in: `whole` itself, or with `--split` one
    /// of its groups (all of one size), with the groups; why not where the split cannot run.
    pub(super) fn split_of(
        &self,
        whole: WorldShape,
    ) -> Result<(WorldShape, Option<Arc<SplitGroups>>), String> {
        let Some(rule) = self.split else {
            return Ok((whole, None));
        };
        let split = SplitGroups::of(rule, whole.world())?;
        if split.groups.len() == 1 {
            return Ok((whole, None));
        }
        let group = WorldShape {
            nodes: 1,
            per_node: split.size(),
        };
        Ok((group, Some(Arc::new(split))))
    }

    /// [`Self::split_of`], saying in `notes` why a world is skipped, or that a split makes one
    /// group of it (its points are then plain ones: nothing runs beside them).
    pub(super) fn split_noted(
        &self,
        whole: WorldShape,
        notes: &mut Vec<String>,
    ) -> Option<(WorldShape, Option<Arc<SplitGroups>>)> {
        let world = whole.world();
        match self.split_of(whole) {
            Err(why) => {
                notes.push(format!("{why}; world {world} skipped"));
                None
            }
            Ok(found) => {
                if let (Some(rule), None) = (self.split, &found.1) {
                    notes.push(format!(
                        "--split {rule} makes one group of world {world}: measured as plain points"
                    ));
                }
                Some(found)
            }
        }
    }
}

/// Adds a point: alone, then beside a compute load with `--with-compute`, or with a split each
/// group's point alone and then all of them at once; so that a call beside others is measured
/// right after the same call alone.
pub(super) fn push_point(
    plan: &mut Plan,
    point: Point,
    split: Option<&Arc<SplitGroups>>,
    compute: Option<ComputeKind>,
) {
    if let Some(kind) = compute {
        let beside = Point {
            compute: Some(kind),
            ..point.clone()
        };
        plan.points.extend([point, beside]);
        return;
    }
    let Some(split) = split else {
        plan.points.push(point);
        return;
    };
    let alone = (0..split.groups.len()).map(Some);
    for alone in alone.chain([None]) {
        let mut p = point.clone();
        p.split = Some(PointSplit {
            split: split.clone(),
            alone,
            beside: None,
        });
        plan.points.push(p);
    }
}
