//! The projected step as a list of actions one rank replays: compute stand-ins, collectives
//! started on the communication stream, and waits for that stream. Built from the same units,
//! sizes and rules as [`crate::project::step`], and checked against it: [`simulate`] runs the
//! list on the fitted network with two streams and must reproduce `step_time` exactly (with
//! `overlap_slowdown` 0, the replay's premise).

use serde::{Deserialize, Serialize};

use crate::collective::Op;
use crate::project::layout::Layout;
use crate::project::model::ModelSpec;
use crate::project::roofline::{optimizer_seconds, Chip, ComputeModel, Work};
use crate::project::stage::Stage;
use crate::project::step::{unit_compute, StepBatch, StepOptions};

/// One thing a rank does in the replayed step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum Action {
    /// Busy for `s` seconds of wall-clock time (a unit's forward or backward kernels).
    Compute { s: f64 },
    /// Queue a collective over the data-parallel group on the communication stream; `bytes` is
    /// its nccl-tests size (AllGather output, ReduceScatter input), bf16 elements.
    Start { op: Op, bytes: usize },
    /// Block until everything queued on the communication stream has finished.
    Wait,
}

/// Per-microbatch work of one FSDP unit.
#[derive(Clone, Copy, Debug)]
struct Unit {
    fwd_s: f64,
    bwd_s: f64,
    bytes: usize,
}

/// What the schedule is built from: the projection's own inputs.
pub struct ScheduleInput<'a> {
    pub model: &'a ModelSpec,
    pub chip: &'a Chip,
    pub layout: &'a Layout,
    pub stage: &'a Stage,
    pub batch: &'a StepBatch,
    pub opts: &'a StepOptions,
}

/// The actions of one step of `input.stage`, in order.
pub fn schedule(input: &ScheduleInput<'_>) -> Vec<Action> {
    let tp = input.layout.tp as f64;
    let work = Work {
        tokens: (input.batch.microbatch * input.batch.seq) as f64,
        seq: input.batch.seq,
        tp: input.layout.tp,
        ep: input.layout.ep,
    };
    let cm = ComputeModel::from_option(input.opts.compute_efficiency);
    let units: Vec<Unit> = input
        .stage
        .units
        .iter()
        .map(|u| {
            let s = unit_compute(input.model, input.chip, u, &work, input.opts);
            Unit {
                fwd_s: s.fwd,
                bwd_s: s.bwd,
                bytes: (2.0 * u.params as f64 / tp) as usize,
            }
        })
        .collect();
    let mut out = Vec::new();
    if units.is_empty() {
        return out;
    }
    for mb in 0..input.batch.microbatches {
        let last = mb + 1 == input.batch.microbatches;
        let reshard = input.opts.reshard;
        forward(&mut out, &units, reshard || mb == 0);
        backward(&mut out, &units, reshard, reshard || last);
    }
    // The FSDP-only replay shards the optimizer state over the whole data-parallel group.
    let shard = input.stage.params() as f64 / (input.layout.tp * input.layout.dp) as f64;
    let optimizer = optimizer_seconds(input.chip, shard, cm);
    if optimizer > 0.0 {
        out.push(Action::Compute { s: optimizer });
    }
    out
}

fn gather(u: &Unit) -> Action {
    Action::Start {
        op: Op::AllGather,
        bytes: u.bytes,
    }
}

fn reduce(u: &Unit) -> Action {
    Action::Start {
        op: Op::ReduceScatter,
        bytes: u.bytes,
    }
}

/// The first unit's AllGather blocks; each unit's compute hides the next one's (prefetch).
fn forward(out: &mut Vec<Action>, units: &[Unit], gathers: bool) {
    if gathers {
        out.extend([gather(&units[0]), Action::Wait]);
    }
    for (i, u) in units.iter().enumerate() {
        if gathers {
            out.extend(units.get(i + 1).map(gather));
        }
        out.extend([Action::Compute { s: u.fwd_s }, Action::Wait]);
    }
}

/// In reverse: each unit's backward hides the previous unit's ReduceScatter (and with re-shard
/// the prefetch of the next AllGather); the last ReduceScatter blocks.
fn backward(out: &mut Vec<Action>, units: &[Unit], gathers: bool, reduces: bool) {
    let k = units.len();
    if gathers {
        out.extend([gather(&units[k - 1]), Action::Wait]);
    }
    for i in (0..k).rev() {
        if reduces {
            out.extend(units.get(i + 1).map(reduce));
        }
        if gathers && i > 0 {
            out.push(gather(&units[i - 1]));
        }
        out.extend([Action::Compute { s: units[i].bwd_s }, Action::Wait]);
    }
    if reduces {
        out.extend([reduce(&units[0]), Action::Wait]);
    }
}

/// A step's time split as the projection splits it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Split {
    pub step_s: f64,
    pub compute_s: f64,
    pub exposed_comm_s: f64,
    pub overlapped_comm_s: f64,
}

/// Runs `actions` on two streams (compute, communication), each collective taking `time(op,
/// bytes)` seconds: the step as the projection times it.
pub fn simulate<E>(
    actions: &[Action],
    mut time: impl FnMut(Op, usize) -> Result<f64, E>,
) -> Result<Split, E> {
    let (mut now, mut comm_free, mut compute, mut comm) = (0.0f64, 0.0f64, 0.0, 0.0);
    for a in actions {
        match *a {
            Action::Compute { s } => {
                now += s;
                compute += s;
            }
            Action::Start { op, bytes } => {
                let t = time(op, bytes)?;
                comm += t;
                comm_free = comm_free.max(now) + t;
            }
            Action::Wait => now = now.max(comm_free),
        }
    }
    let exposed = now - compute;
    Ok(Split {
        step_s: now,
        compute_s: compute,
        exposed_comm_s: exposed,
        overlapped_comm_s: comm - exposed,
    })
}

/// The largest collective of the schedule, bytes (buffers are sized once for it).
pub fn largest(actions: &[Action]) -> usize {
    actions
        .iter()
        .map(|a| match a {
            Action::Start { bytes, .. } => *bytes,
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
