//! The time of one training step on one pipeline stage, split into compute, slowdown of
//! overlapped compute, exposed and overlapped communication, and pipeline bubble.
//!
//! Per microbatch, the stage runs its units forward, then backward. FSDP communication runs on
//! its own stream, one collective at a time, and hides behind compute:
//!
//! - forward: the AllGather of unit 1 is exposed; while unit i computes, unit i+1 is gathered
//!   (prefetch). Parameters stay gathered until backward (no re-shard), so only the first
//!   microbatch gathers, and backward gathers nothing;
//! - backward, in reverse: while unit i computes, the gradients of unit i+1 are reduce-scattered
//!   (with hybrid sharding followed by an AllReduce of the shard across nodes); the last
//!   ReduceScatter (unit 1) is exposed. Gradients accumulate locally and are reduced in the last
//!   microbatch's backward only;
//! - with `reshard`, every microbatch gathers in forward and again in backward (prefetching the
//!   previous unit), and reduces its gradients.
//!
//! A window of compute `c` with communication `x` beside it: compute runs `1 + σ` times slower
//! while overlapped (σ = `overlap_slowdown`), and the communication takes `x` times
//! `comm_overlap_slowdown` (1 unless the fit measured it, [`super::overlap`]). With `tp` > 1
//! the stage's DP groups run their collectives at once, each taking `dp_at_once` times its time
//! alone (1 unless the fit measured groups at once, [`super::at_once`]). If `x ≥ c·(1+σ)` the window lasts `x`, `x − c·(1+σ)`
//! of it exposed; otherwise it lasts `c + x·σ/(1+σ)` with nothing exposed. FSDP communication
//! hides only behind compute, not behind tensor parallelism's AllReduces, which block (two per
//! layer forward, two backward, of the microbatch's activations `2·b·s·h` bytes, over the TP
//! group); where the fit measured the two at once, what is left of it runs beside them
//! ([`super::step_passes`]). Pipeline stages pass activations forward and gradients backward point to point each
//! microbatch (`2·b·s·h` bytes each way, exposed; [`Network::pp_transfer_s`]). The bubble is
//! `(pp − 1)` microbatch times (`(pp−1)/(m+pp−1)` of the pipeline), `1/v` of that with an
//! interleaved schedule of `v` chunks per stage (whose `v` times as many sends overlap compute). Unit compute times come
//! from [`super::roofline`]; the optimizer step (roofline only) runs once at the end of the
//! step, on the GPU's shard.
//!
//! Mixture of experts: the AllToAlls and FSDP's expert collectives of [`super::moe`].

use serde::Serialize;

use super::at_once::{DpAtOnce, TpBesideDp};
use super::calibration::Calibration;
use super::comm::Network;
use super::layout::Layout;
use super::model::ModelSpec;
use super::moe::{fsdp_times, moe_alltoall_s};
use super::overlap::{Acc, OverlapSource};
use super::overlap_sizes::OverlapSizes;
use super::roofline::{optimizer_seconds, unit_seconds, Chip, ComputeModel, UnitSeconds, Work};
use super::stage::{Stage, Unit, UnitKind};
use super::step_passes::{backward, forward, passes, UnitCost};
use crate::collective::routing::Routing;
use crate::collective::Op;
use crate::error::{Error, Result};

/// The step model's knobs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StepOptions {
    /// Re-shard parameters after forward (AllGather again in backward).
    pub reshard: bool,
    /// Shard within a node, replicate across nodes.
    pub hybrid: bool,
    /// Fraction of peak FLOP/s every compute kernel reaches (the flat rule); `None`: the
    /// roofline per part of a layer.
    pub compute_efficiency: Option<f64>,
    /// Compute slowdown while communication overlaps it (0.19 = 19% slower).
    pub overlap_slowdown: f64,
    /// Overlapped communication's time over its time alone (1: as fast as alone).
    pub comm_overlap_slowdown: f64,
    /// Where the two came from.
    pub overlap_source: OverlapSource,
    /// The measured slowdowns by size, which replace the two above at each overlapped
    /// collective's size where the fit has them ([`super::overlap_sizes`]).
    #[serde(skip)]
    pub overlap_sizes: OverlapSizes,
    /// The DP collectives' slowdown where a layout's `tp` DP groups run at once
    /// ([`super::at_once`]; 1: as fast as alone).
    pub dp_at_once: DpAtOnce,
    /// A TP AllReduce's and the DP collectives' slowdowns at once, where the fit measured them
    /// ([`super::at_once::measured_tp_beside`]): FSDP communication left exposed after a
    /// unit's compute then runs beside its TP AllReduces; `None`: one after the other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tp_beside_dp: Option<TpBesideDp>,
    /// What the roofline leaves out ([`super::calibration`]); the identity by default.
    #[serde(skip_serializing_if = "Calibration::is_identity")]
    pub calibration: Calibration,
    /// Pipeline chunks per stage of an interleaved schedule (Narayanan et al. 2021, §2.2.2):
    /// the bubble is `1/v` of the 1F1B one; the `v` times as many point-to-point transfers
    /// are taken as overlapped with compute, as Megatron-LM overlaps them; 1: plain 1F1B.
    pub virtual_stages: usize,
    /// Full activation recomputation: each layer keeps only its input and runs its forward
    /// again (with its tensor-parallel AllReduces) before its backward.
    pub recompute: bool,
    /// The busiest expert-parallel rank's tokens over the mean (1: a balanced router): it
    /// sends and receives that many times the mean bytes, and so sets every MoE AllToAll's time.
    pub ep_load: f64,
    /// The router of the fit's alltoallv traffic, whose load ratio at each layout's expert
    /// parallelism replaces `ep_load` (where `--ep-load` was not given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ep_router: Option<Routing>,
}

impl Default for StepOptions {
    /// A plain `collbench project`: the roofline, the default σ, FSDP without re-sharding or
    /// recomputation, a balanced router, nothing measured beside anything.
    fn default() -> Self {
        StepOptions {
            reshard: false,
            hybrid: false,
            compute_efficiency: None,
            overlap_slowdown: super::overlap::DEFAULT_SIGMA,
            comm_overlap_slowdown: 1.0,
            overlap_source: OverlapSource::Default,
            overlap_sizes: OverlapSizes::default(),
            dp_at_once: DpAtOnce::default(),
            tp_beside_dp: None,
            calibration: Calibration::IDENTITY,
            virtual_stages: 1,
            recompute: false,
            ep_load: 1.0,
            ep_router: None,
        }
    }
}

impl StepOptions {
    /// These options with the busiest rank's load at `ep` expert-parallel ranks resolved: the
    /// router's skew (its Zipf exponent, seed and tokens) over the model's `experts` shared
    /// among the `ep` ranks, each token to the model's `top_k`; `ep_load` where there is no
    /// router.
    pub fn at_ep(&self, ep: usize, (experts, top_k): (usize, usize)) -> Result<StepOptions> {
        let Some(r) = self.ep_router.filter(|_| ep > 1 && experts > 0) else {
            return Ok(*self);
        };
        let router = Routing {
            experts: (experts / ep).max(1),
            top_k: top_k.clamp(1, experts),
            ..r
        };
        let load = router.load_ratio(ep).map_err(|e| {
            Error::usage(format!(
                "the fit's alltoallv router at ep {ep}: {e}; give --ep-load instead"
            ))
        })?;
        Ok(StepOptions {
            ep_load: load,
            ..*self
        })
    }
}

/// One stage's batch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepBatch {
    pub seq: usize,
    /// Sequences per microbatch.
    pub microbatch: usize,
    pub microbatches: usize,
}

/// Seconds of one step, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTime {
    pub compute_s: f64,
    pub overlap_slowdown_s: f64,
    pub exposed_comm_s: f64,
    pub overlapped_comm_s: f64,
    pub bubble_s: f64,
    /// Of `compute_s`, the seconds of memory-bound parts (roofline only).
    pub memory_bound_s: f64,
    /// Of `exposed_comm_s`, the seconds of MoE AllToAlls.
    pub alltoall_s: f64,
}

impl StepTime {
    pub fn step_time_s(&self) -> f64 {
        self.compute_s + self.overlap_slowdown_s + self.exposed_comm_s + self.bubble_s
    }
}

/// The step time of the slowest stage.
pub fn step_time(
    model: &ModelSpec,
    chip: &Chip,
    layout: &Layout,
    stages: &[Stage],
    batch: &StepBatch,
    opts: &StepOptions,
    net: &Network,
) -> Result<StepTime> {
    let mut worst = StepTime::default();
    for stage in stages {
        let (costs, alltoall) = unit_costs(model, chip, layout, stage, batch, opts, net)?;
        let p2p = if layout.pp > 1 {
            let bytes = 2.0 * (batch.microbatch * batch.seq * model.hidden) as f64;
            // An interleaved schedule sends v times as often, but overlaps the extra transfers
            // with compute (Megatron-LM's overlap_p2p_comm): one transfer's time is exposed.
            2.0 * net.pp_transfer_s(layout.pp_pair(), bytes)?
        } else {
            0.0
        };
        let mut t = stage_time(&costs, batch.microbatches, layout.pp, p2p, opts);
        t.alltoall_s = batch.microbatches as f64 * alltoall;
        let optimizer = optimizer_seconds(chip, shard_params(layout, stage, opts), cm(opts));
        t.compute_s += optimizer;
        t.memory_bound_s += optimizer;
        if t.step_time_s() > worst.step_time_s() {
            worst = t;
        }
    }
    Ok(worst)
}

fn cm(opts: &StepOptions) -> ComputeModel {
    ComputeModel::from_option(opts.compute_efficiency)
}

/// Compute seconds of one unit per microbatch under `opts` (the step model and the replay's
/// schedule both take them from here).
pub fn unit_compute(
    model: &ModelSpec,
    chip: &Chip,
    unit: &Unit,
    work: &Work,
    opts: &StepOptions,
) -> UnitSeconds {
    let secs = unit_seconds(model, chip, unit, work, cm(opts));
    let (secs, passes_bwd) = match recomputes(unit, opts) {
        true => (secs.recomputed(), 2.0),
        false => (secs, 1.0),
    };
    match unit.kind {
        UnitKind::Layer => opts.calibration.layer(secs, passes_bwd),
        _ => secs,
    }
}

/// Only transformer layers are checkpointed; embedding and head keep their activations.
fn recomputes(unit: &Unit, opts: &StepOptions) -> bool {
    opts.recompute && unit.kind == UnitKind::Layer
}

/// Parameters of the stage one GPU keeps optimizer state for.
fn shard_params(layout: &Layout, stage: &Stage, opts: &StepOptions) -> f64 {
    let shard = match (opts.hybrid, layout.hybrid_groups()) {
        (true, Some((shard, _))) => shard.ranks,
        _ => layout.dp,
    };
    stage.params() as f64 / (layout.tp * shard.max(1)) as f64
}

/// The per-microbatch costs of the stage's units, and the seconds of MoE AllToAll per
/// microbatch among them.
fn unit_costs(
    model: &ModelSpec,
    chip: &Chip,
    layout: &Layout,
    stage: &Stage,
    batch: &StepBatch,
    opts: &StepOptions,
    net: &Network,
) -> Result<(Vec<UnitCost>, f64)> {
    let tp = layout.tp as f64;
    let tokens = (batch.microbatch * batch.seq) as f64;
    let work = Work {
        tokens,
        seq: batch.seq,
        tp: layout.tp,
        ep: layout.ep,
    };
    let act_bytes = 2.0 * tokens * model.hidden as f64;
    let tp_ar = 2.0 * net.time_s(Op::AllReduce, layout.tp_group(), act_bytes)?;
    // The most loaded rank of the group sets the time (the others wait for it).
    let a2a = 2.0 * moe_alltoall_s(model, layout, tokens * opts.ep_load, net)?;
    let hybrid = if opts.hybrid {
        layout.hybrid_groups()
    } else {
        None
    };
    // The stage's tp DP groups gather and reduce at the same time.
    let at_once = match layout.tp > 1 {
        true => opts.dp_at_once,
        false => DpAtOnce::default(),
    };
    let costs = stage
        .units
        .iter()
        .map(|u| {
            let secs = unit_compute(model, chip, u, &work, opts);
            let (gather, reduce) = match hybrid {
                Some((shard, replicas)) => {
                    let bytes = 2.0 * u.params as f64 / tp;
                    (
                        net.time_s(Op::AllGather, shard, bytes)?,
                        net.time_s(Op::ReduceScatter, shard, bytes)?
                            + net.time_s(Op::AllReduce, replicas, bytes / shard.ranks as f64)?,
                    )
                }
                None => fsdp_times(u, layout, net)?,
            };
            let (gather, reduce) = (gather * at_once.gather, reduce * at_once.reduce);
            // The slowdowns at the size of the unit's AllGather (its ReduceScatter's too).
            let gathered = 2.0 * u.params as f64 / tp;
            let (sigma, comm) = (opts.overlap_sizes.at(gathered))
                .unwrap_or((opts.overlap_slowdown, opts.comm_overlap_slowdown));
            let (tp_cost, a2a_cost) = if u.kind == UnitKind::Layer {
                (tp_ar, a2a)
            } else {
                (0.0, 0.0)
            };
            let blocking = tp_cost + a2a_cost;
            let recomputed = if recomputes(u, opts) { blocking } else { 0.0 };
            Ok(UnitCost {
                fwd: secs.fwd,
                bwd: secs.bwd,
                tp_fwd: blocking,
                tp_bwd: blocking + recomputed,
                tp_ar: tp_cost,
                gather,
                reduce,
                memory_bound: secs.memory_bound,
                sigma,
                comm,
            })
        })
        .collect::<Result<Vec<UnitCost>>>()?;
    // A layer's AllToAlls run in its forward and backward, and again in a recomputed forward.
    let alltoall = stage
        .units
        .iter()
        .filter(|u| u.kind == UnitKind::Layer)
        .fold(0.0, |sum, u| {
            let runs = if recomputes(u, opts) { 3.0 } else { 2.0 };
            sum + runs * a2a
        });
    Ok((costs, alltoall))
}

/// One stage's step: every microbatch forward and backward, the point-to-point transfers
/// (`p2p` seconds per microbatch) and the bubble.
fn stage_time(
    units: &[UnitCost],
    microbatches: usize,
    pp: usize,
    p2p: f64,
    opts: &StepOptions,
) -> StepTime {
    let mut acc = Acc::default();
    if units.is_empty() {
        return StepTime::default();
    }
    let beside = (opts.tp_beside_dp).map(|b| b.beyond(opts.dp_at_once));
    for mb in 0..microbatches {
        let p = passes(mb, microbatches, opts.reshard);
        forward(&mut acc, units, p, beside);
        backward(&mut acc, units, p, beside);
        acc.blocking(p2p);
    }
    let per_mb: f64 = units
        .iter()
        .map(|u| u.fwd + u.bwd + u.tp_fwd + u.tp_bwd)
        .sum::<f64>()
        + p2p;
    let memory_bound: f64 = units.iter().map(|u| u.memory_bound).sum();
    StepTime {
        memory_bound_s: microbatches as f64 * memory_bound,
        compute_s: acc.compute,
        overlap_slowdown_s: acc.slowdown,
        exposed_comm_s: acc.exposed,
        overlapped_comm_s: acc.hidden,
        bubble_s: (pp - 1) as f64 * per_mb / opts.virtual_stages.max(1) as f64,
        // Set by the caller, which knows which of the blocking seconds were AllToAlls.
        alltoall_s: 0.0,
    }
}

#[cfg(test)]
#[path = "step_tests.rs"]
mod tests;
