//! What `--replay` checks before anything starts, and the replay of one projected row.

use std::time::Duration;

use super::launch::run_ranks;
use super::schedule::{schedule, simulate, ScheduleInput};
use super::{max_world, Comparison, ReplayPlan, WARMUP_STEPS};
use crate::error::{Error, Result};
use crate::fit::schema::FitFile;
use crate::project::comm::Network;
use crate::project::layout::Layout;
use crate::project::plan::{Request, Row};
use crate::project::roofline::Chip;
use crate::project::stage::stages;
use crate::project::step::StepBatch;

/// Refuses a request the replay cannot run on this machine, naming the flag and the fix.
pub fn check(req: &Request, cores: usize) -> Result<()> {
    let limit = max_world(cores);
    let [world] = req.worlds[..] else {
        return Err(Error::usage(format!(
            "--replay runs one world size, not {}: give --world-sizes N with N from 2 to {limit}",
            req.worlds.len()
        )));
    };
    if world < 2 || world > limit {
        return Err(Error::usage(format!(
            "--world-sizes {world} with --replay: this machine has {cores} cores and a replay \
             rank runs two threads, so give --world-sizes from 2 to {limit}"
        )));
    }
    if req.tps != [1] || req.pps != [1] {
        let list = |v: &[usize]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        return Err(Error::usage(format!(
            "--tp {} --pp {} with --replay: the replay runs FSDP only; leave out --tp and --pp",
            list(&req.tps),
            list(&req.pps)
        )));
    }
    if req.eps != [1] {
        return Err(Error::usage(format!(
            "--ep {} with --replay: the replay runs FSDP only, without MoE AllToAlls; leave out \
             --ep",
            req.eps
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    if req.opts.hybrid {
        return Err(Error::usage(
            "--hybrid with --replay: the replay runs on one node, where hybrid sharding is plain \
             FSDP; leave out --hybrid",
        ));
    }
    let gpn = req.hardware.gpus_per_node;
    if world > gpn {
        return Err(Error::usage(format!(
            "--world-sizes {world} with --replay: hardware {} has {gpn} GPUs per node and the \
             replay runs one node; use a hardware spec with gpus_per_node >= {world}",
            req.hardware.name
        )));
    }
    Ok(())
}

/// Layer passes (microbatches × units) a replay's schedule may hold: its plan travels to the
/// ranks in an environment variable, which holds at most 128 KiB.
const MAX_PASSES: usize = 4096;

/// Replays the projected step of `row` for `steps` timed steps; a rank that finishes no step
/// for `stall` (or ten projected steps, if longer) stops the replay. The comparison holds every
/// step measured, and the error why the ranks were stopped early, if they were.
pub fn replay(
    req: &Request,
    row: &Row,
    fit: &FitFile,
    steps: usize,
    stall: Duration,
) -> Result<(Comparison, Option<Error>)> {
    let passes = row.microbatches.saturating_mul(req.model.layers + 2);
    if passes > MAX_PASSES {
        return Err(Error::usage(format!(
            "--replay: {} microbatches × {} layers is beyond the {MAX_PASSES} layer passes a \
             replay schedules; give fewer --microbatches or a model with fewer layers",
            row.microbatches, req.model.layers
        )));
    }
    let layout = Layout::new(row.world, 1, 1, req.hardware.gpus_per_node).map_err(Error::usage)?;
    let st = stages(&req.model, 1, req.seq).map_err(Error::usage)?;
    let batch = StepBatch {
        seq: req.seq,
        microbatch: row.microbatch_size,
        microbatches: row.microbatches,
    };
    let actions = schedule(&ScheduleInput {
        model: &req.model,
        chip: &Chip::new(&req.hardware),
        layout: &layout,
        stage: &st[0],
        batch: &batch,
        opts: &req.opts,
    });
    let net = Network::new(fit);
    let group = layout.dp_group();
    let projected = simulate(&actions, |op, bytes| net.time_s(op, group, bytes as f64))?;
    let plan = ReplayPlan {
        world: row.world,
        steps,
        warmup: WARMUP_STEPS,
        actions,
    };
    // A step may run several times slower than projected on a loaded machine.
    let stall = stall.max(Duration::from_secs_f64((projected.step_s * 10.0).min(1e6)));
    let measured = run_ranks(&plan, stall)?;
    let comparison = Comparison {
        projected,
        steps: measured.steps,
    };
    Ok((comparison, measured.stopped))
}
