//! What an NCCL launch measures: the sweep's options for its world, the plan, and the stages
//! (one per algorithm, protocol and communicator setup), or one usage error saying why nothing
//! can be measured. Checked once by the local launcher and again by every rank.

use crate::backend::nccl::tuning::{self, Stage};
use crate::error::{Error, Result};
use crate::model::call::BackendKind;
use crate::model::plan::{Plan, SweepOptions};
use crate::sweep::request::SweepRequest;

/// The options, plan and stages of a launch of `world` ranks; a usage error when they are
/// inconsistent or measure nothing.
pub fn check_plan(req: &SweepRequest, world: usize) -> Result<(SweepOptions, Plan, Vec<Stage>)> {
    let opts = resolve(req, world)?;
    let mut plan = opts.plan_for(BackendKind::Nccl);
    let stages = tuning::stages(&plan.points, &req.protos, &req.comm.setups());
    let ops: Vec<_> = plan.points.iter().map(|p| p.call.op).collect();
    if let Some(note) = tuning::protocol_note(&ops, &req.protos) {
        // First where it is why points are missing, so that "nothing to measure" names it.
        let at = if req.protos.contains(&crate::collective::Proto::Auto) {
            plan.notes.len()
        } else {
            0
        };
        plan.notes.insert(at, note);
    }
    if stages.iter().all(Stage::is_empty) {
        return Err(Error::usage(format!(
            "nothing to measure: {}",
            plan.notes.first().map_or("no points", |n| n.as_str())
        )));
    }
    Ok((opts, plan, stages))
}

/// The options of this launch: its world, and the world sizes measured (groups of the first
/// ranks).
fn resolve(req: &SweepRequest, world: usize) -> Result<SweepOptions> {
    let mut opts = req.opts.clone();
    opts.ranks = world;
    opts.world_sizes = if req.world_specs.is_empty() {
        vec![world]
    } else {
        req.world_specs
            .iter()
            .map(crate::model::topology::WorldSpec::world)
            .collect()
    };
    opts.validate_for(BackendKind::Nccl)?;
    Ok(opts)
}
