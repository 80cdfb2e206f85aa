//! The projection over world sizes and layouts: checks the request, sizes each layout's batch,
//! checks memory, times the step, and marks the best layout per world size. Pure: specs and a
//! fit in, rows and notes out.

use serde::Serialize;

use super::comm::Network;
use super::hardware::HardwareSpec;
use super::layout::{check_world, Layout};
use super::memory::{memory, Memory, MemoryInput};
use super::metrics::{metrics, StepWork};
use super::model::ModelSpec;
use super::roofline::Chip;
pub use super::row::Row;
use super::scaling::{self, Bound, LayoutScaling};
use super::stage::stages;
use super::step::{step_time, StepBatch, StepOptions};
use crate::error::{Error, Result};
use crate::fit::schema::FitFile;

/// How the global batch follows the world size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "scaling", rename_all = "lowercase")]
pub enum Batch {
    /// Weak scaling: `local` sequences per GPU (per data-parallel rank of an FSDP-only layout),
    /// so the global batch is `local × world` for every layout at a world size; a DP rank of
    /// `tp·pp` GPUs takes `local·tp·pp` sequences.
    Weak { local: usize },
    /// Strong scaling: the same global batch at every world size, `global / dp` per DP rank.
    Strong { global: usize },
}

/// Everything a projection depends on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Request {
    pub model: ModelSpec,
    pub hardware: HardwareSpec,
    pub worlds: Vec<usize>,
    pub tps: Vec<usize>,
    pub pps: Vec<usize>,
    /// Expert-parallel degrees (MoE models; `[1]` otherwise).
    pub eps: Vec<usize>,
    pub seq: usize,
    pub batch: Batch,
    /// Microbatches per step [default: one per sequence with pp > 1, else 1].
    pub microbatches: Option<usize>,
    #[serde(flatten)]
    pub opts: StepOptions,
    /// GPU power while only communicating, measured by NVML in the fit's source runs, W;
    /// `None`: the hardware's idle power stands in.
    pub comm_power_w: Option<f64>,
    /// Time the step of a layout that does not fit in memory as well (a published run that
    /// ran where the memory model says it cannot: [`super::anchors`]); its row still says it
    /// does not fit.
    #[serde(skip)]
    pub unfit_steps: bool,
}

/// Rows in world, tp, pp order, and what the projection had to say.
#[derive(Clone, Debug, PartialEq)]
pub struct Projection {
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
    /// Per layout: baseline, critical scale, T(N) fit.
    pub layouts: Vec<LayoutScaling>,
}

/// Runs the projection; impossible requests are usage errors naming the value.
pub fn project(req: &Request, fit: &FitFile) -> Result<Projection> {
    check_request(req)?;
    let net = Network::new(fit);
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    // The router's load is drawn once per expert parallelism.
    let moe = (req.model.experts, req.model.top_k);
    let per_ep: Vec<StepOptions> = (req.eps.iter())
        .map(|&ep| req.opts.at_ep(ep, moe))
        .collect::<Result<_>>()?;
    for &world in &req.worlds {
        let before = rows.len();
        let mut why = Vec::new();
        for &tp in &req.tps {
            for &pp in &req.pps {
                for (&ep, opts) in req.eps.iter().zip(&per_ep) {
                    match plan_row((req, opts), world, (tp, pp, ep), &net)? {
                        Ok(row) => rows.push(row),
                        Err(reason) => {
                            why.push(format!("{}: {reason}", scaling::layout_name(tp, pp, ep)))
                        }
                    }
                }
            }
        }
        if rows.len() == before {
            return Err(Error::usage(format!(
                "world {world}: no layout can run ({})",
                why.join("; ")
            )));
        }
        notes.extend(
            why.into_iter()
                .map(|w| format!("world {world}, {w}; skipped")),
        );
    }
    mark_best(&mut rows);
    marginals(&mut rows);
    scaling::annotate(&mut rows, req.hardware.hbm_gb, req.opts.compute_efficiency);
    let (layouts, scaling_notes) = scaling::layouts(&rows);
    notes.extend(net.notes());
    notes.extend(scaling_notes);
    Ok(Projection {
        rows,
        notes,
        layouts,
    })
}

fn check_request(req: &Request) -> Result<()> {
    let m = &req.model;
    for &world in &req.worlds {
        check_world(world, req.hardware.gpus_per_node)?;
    }
    for &tp in &req.tps {
        if tp == 0 || m.heads % tp != 0 {
            return Err(Error::usage(format!(
                "--tp {tp}: the {} heads of {} are not divisible by tp",
                m.heads, m.name
            )));
        }
    }
    let v = req.opts.virtual_stages;
    for &pp in &req.pps {
        let st = stages(m, pp, req.seq).map_err(|e| Error::usage(format!("--pp {pp}: {e}")))?;
        let fewest = st.iter().map(|s| s.most_chunks()).min().unwrap_or(0);
        if v > 1 && (pp == 1 || v > fewest) {
            return Err(Error::usage(format!(
                "--virtual-stages {v} with --pp {pp}: each stage needs at least {v} chunks, a \
                 layer each or the embedding or head (its fewest has {fewest}), and pp must be \
                 above 1"
            )));
        }
    }
    for &ep in &req.eps {
        check_ep(req, ep)?;
    }
    if let Some(e) = req.opts.compute_efficiency {
        if !(e > 0.0 && e <= 1.0) {
            return Err(Error::usage(format!(
                "--compute-efficiency {e}: give a fraction of peak in (0, 1]"
            )));
        }
    }
    let s = req.opts.overlap_slowdown;
    if !(s >= 0.0 && s.is_finite()) {
        return Err(Error::usage(format!(
            "--overlap-slowdown {s}: give a fraction >= 0 (0.19 = 19% slower)"
        )));
    }
    Ok(())
}

/// An expert-parallel degree the model and options allow (whether it divides a layout's dp
/// is decided per layout).
fn check_ep(req: &Request, ep: usize) -> Result<()> {
    let m = &req.model;
    if ep == 1 {
        return Ok(());
    }
    if !m.is_moe() {
        return Err(Error::usage(format!(
            "--ep {ep}: {} is a dense model without experts; give --ep 1 (the default), or a \
             mixture-of-experts model (mixtral-8x7b, or a TOML file with experts and top_k)",
            m.name
        )));
    }
    if ep == 0 || m.experts % ep != 0 {
        let divisors: Vec<String> = (1..=m.experts)
            .filter(|d| m.experts % d == 0)
            .take(12)
            .map(|d| d.to_string())
            .collect();
        return Err(Error::usage(format!(
            "--ep {ep}: the {} experts of {} do not split evenly over ep = {ep} ranks; give a \
             divisor of {} ({}{})",
            m.experts,
            m.name,
            m.experts,
            divisors.join(", "),
            if divisors.len() == 12 { ", ..." } else { "" }
        )));
    }
    if req.opts.hybrid {
        return Err(Error::usage(format!(
            "--ep {ep} with --hybrid: hybrid sharding of expert-parallel layouts is not \
             modelled; leave out --hybrid or give --ep 1"
        )));
    }
    Ok(())
}

/// The batch of one layout: (global batch, microbatches, sequences per microbatch), or why not.
fn layout_batch(req: &Request, l: &Layout) -> Result<(usize, usize, usize), String> {
    let (global, per_dp) = match req.batch {
        Batch::Weak { local } => (local * l.world, local * l.tp * l.pp),
        Batch::Strong { global } => {
            if global % l.dp != 0 {
                return Err(format!(
                    "global batch {global} is not divisible by dp {}",
                    l.dp
                ));
            }
            (global, global / l.dp)
        }
    };
    let m = req
        .microbatches
        .unwrap_or(if l.pp > 1 { per_dp } else { 1 });
    if m == 0 || per_dp % m != 0 {
        return Err(format!(
            "{per_dp} sequences per data-parallel rank do not split into {m} microbatches"
        ));
    }
    Ok((global, m, per_dp / m))
}

/// One row, or the reason the layout cannot run (an error only for a fit lacking a model).
fn plan_row(
    (req, opts): (&Request, &StepOptions),
    world: usize,
    (tp, pp, ep): (usize, usize, usize),
    net: &Network,
) -> Result<Result<Row, String>> {
    let hw = &req.hardware;
    let layout = match Layout::new(world, tp, pp, hw.gpus_per_node).and_then(|l| l.with_ep(ep)) {
        Ok(l) => l,
        Err(e) => return Ok(Err(e)),
    };
    let (global, m, mb) = match layout_batch(req, &layout) {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    let st = stages(&req.model, pp, req.seq).map_err(Error::usage)?;
    let mem = memory(&req.model, &layout, &st, &mem_input(req, &layout, m, mb));
    let fits = mem.total() <= hw.hbm_bytes();
    let batch = StepBatch {
        seq: req.seq,
        microbatch: mb,
        microbatches: m,
    };
    let metrics = if fits || req.unfit_steps {
        let t = step_time(&req.model, &Chip::new(hw), &layout, &st, &batch, opts, net).map_err(
            |e| {
                let name = scaling::layout_name(tp, pp, ep);
                Error::usage(format!("world {world} {name}: {e}"))
            },
        )?;
        let work = StepWork {
            world,
            tokens: (global * req.seq) as f64,
            flops_per_token: req.model.flops_per_token(req.seq),
            comm_w: req.comm_power_w,
        };
        Some(metrics(&t, hw, &work))
    } else {
        None
    };
    Ok(Ok(Row {
        world,
        nodes: layout.nodes(),
        tp,
        pp,
        dp: layout.dp,
        ep,
        global_batch: global,
        microbatches: m,
        microbatch_size: mb,
        fits_memory: fits,
        memory_gb: mem_gb(&mem),
        metrics,
        best: false,
        marginal_tokens_per_s_per_gpu: None,
        marginal_best_tokens_per_s_per_gpu: None,
        speedup: None,
        parallel_eff: None,
        scaling_eff: None,
        comm_compute_ratio: None,
        bound: Bound::Memory,
        pp_p2p_model: (pp > 1).then(|| net.p2p_model(layout.pp_pair()).name()),
        alltoall_model: if req.model.is_moe() {
            net.alltoall_model(layout.ep_group()).map(|m| m.name())
        } else {
            None
        },
    }))
}

fn mem_input(req: &Request, layout: &Layout, m: usize, mb: usize) -> MemoryInput {
    let shard_ranks = match (req.opts.hybrid, layout.hybrid_groups()) {
        (true, Some((shard, _))) => shard.ranks,
        _ => layout.dp,
    };
    MemoryInput {
        seq: req.seq,
        microbatch: mb,
        microbatches: m,
        reshard: req.opts.reshard,
        recompute: req.opts.recompute,
        shard_ranks,
    }
}

fn mem_gb(m: &Memory) -> f64 {
    m.total() / 1e9
}

fn tps(r: &Row) -> Option<f64> {
    r.metrics.map(|m| m.tokens_per_s)
}

fn mark_best(rows: &mut [Row]) {
    let mut worlds: Vec<usize> = rows.iter().map(|r| r.world).collect();
    worlds.dedup();
    for w in worlds {
        let best = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.world == w)
            .filter_map(|(i, r)| tps(r).map(|t| (i, t)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, _)) = best {
            rows[i].best = true;
        }
    }
}

fn marginals(rows: &mut [Row]) {
    for i in 0..rows.len() {
        let (w, layout) = (rows[i].world, scaling::key(&rows[i]));
        let Some(now) = tps(&rows[i]) else { continue };
        let earlier = |same: &dyn Fn(&Row) -> bool| {
            rows[..i]
                .iter()
                .rev()
                .filter(|r| r.world < w && same(r))
                .find_map(|r| tps(r).map(|t| (t - now, r.world)))
                .map(|(d, pw)| -d / (w - pw) as f64)
        };
        let same_layout = earlier(&|r: &Row| scaling::key(r) == layout);
        let best = if rows[i].best {
            earlier(&|r: &Row| r.best)
        } else {
            None
        };
        rows[i].marginal_tokens_per_s_per_gpu = same_layout;
        rows[i].marginal_best_tokens_per_s_per_gpu = best;
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
pub(super) mod tests;
