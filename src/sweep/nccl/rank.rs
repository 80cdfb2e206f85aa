//! The rank program of an NCCL sweep, the same on every rank whoever started it: load NCCL,
//! open the rank's GPU, then for each (algorithm, protocol) combination set `NCCL_ALGO` and
//! `NCCL_PROTO`, create the world communicator (unique id from rank 0 through the store), split
//! it per world size, and measure every point. After each point every rank's per-iteration
//! times and wrong count are gathered to rank 0 through the store, which applies the
//! slowest-rank rule ([`summarize`]) and writes the point (its telemetry.csv rows first, from
//! NVML sampling around the point on every member, [`point_telemetry`]) before the ranks go on.

use std::sync::Arc;
use std::time::Duration;

pub use super::context::RankContext;
use super::context::{at_point, gather_ranks, with_env};
pub use super::plan::check_plan;
use super::results::{encode_part, PointWriter};
use super::setup::{check_comm_setups, join, run_meta, share_id};
use super::splits::SplitComms;
use crate::backend::nccl::comm::Communicator;
use crate::backend::nccl::config::comm_config;
use crate::backend::nccl::cublas::Cublas;
use crate::backend::nccl::gemm::{load_cublas, GemmLoad};
use crate::backend::nccl::gpu::Gpu;
use crate::backend::nccl::loader::{Nccl, Version};
use crate::backend::nccl::measure::{
    barriers_of, measure, Beside, DeviceBuffers, LaunchMode, Member, Timing,
};
use crate::backend::nccl::placement::buffer_sizes;
use crate::backend::nccl::point_telemetry;
use crate::backend::nccl::sys::ncclConfig_t;
use crate::backend::nccl::telemetry::Telemetry;
use crate::backend::nccl::tuning::{self, Stage};
use crate::error::{Error, Result};
use crate::model::call::Register;
use crate::model::plan::{Plan, Point, Soak};
use crate::sweep::lead::{Lead, Outcome};
use crate::sweep::request::SweepRequest;

/// What every rank holds while it walks the stages.
struct Walk<'a> {
    req: &'a SweepRequest,
    nccl: Arc<Nccl>,
    gpu: Gpu,
    bufs: DeviceBuffers,
    ctx: RankContext,
    /// NVML sampling of the rank's GPU; stopped (`None`) while the NCCL variables change.
    telemetry: Option<Telemetry>,
    /// The user's own `NCCL_ALGO` and `NCCL_PROTO`, read before collbench set any.
    user: (Option<String>, Option<String>),
    /// The library's version, which the communicators' configuration depends on.
    version: Version,
    /// The configuration of the current stage's communicators.
    config: ncclConfig_t,
    /// The soak cycle under way (0 outside soaks).
    cycle: u64,
    /// cuBLAS where the plan has `--with-compute gemm` points, and their load, made at the
    /// rank's first such point.
    blas: Option<Arc<Cublas>>,
    gemm: Option<GemmLoad>,
    /// The median time of one call of the last point measured without a load on this rank:
    /// the point with the load that follows sizes its GEMMs by it.
    alone_us: Option<f64>,
    max_iters: usize,
}

/// Runs this rank's sweep; rank 0 returns the outcome, the others `None`.
pub fn run_rank(req: &SweepRequest, mut ctx: RankContext) -> Result<Option<Outcome>> {
    let user = tuning::user_env();
    // Before NCCL starts and while this process has one thread (profiler::install sets a
    // variable): NCCL then tells the profiler what it ran.
    crate::backend::nccl::profiler::install();
    let nccl = Nccl::load().map_err(|e| Error::Usage(e.to_string()))?;
    if super::bootstrap::only() {
        return super::bootstrap::rehearse(req, ctx, nccl);
    }
    let (opts, plan, stages) = check_plan(req, ctx.world)?;
    check_library(&nccl, &stages)?;
    let version = check_comm_setups(&nccl, &req.comm.setups())?;
    // Before any point: a rank without cuBLAS fails now, not at its first GEMM point.
    let blas = match plan.points.iter().any(|p| p.compute.is_some()) {
        true => Some(load_cublas()?),
        false => None,
    };
    // The first combination's variables are set while this process has one thread, before the
    // CUDA context (and the driver's threads) exist; `stages` changes them only between
    // combinations, with no communicator alive and no thread of ours running.
    if let Some(first) = stages.first() {
        tuning::apply_env(&tuning::env_for(first.algo, first.proto, &user));
    }
    let gpu = Gpu::open(ctx.device)?;
    let (hosts, gpus) = gather_ranks(&mut ctx, &gpu.name)?;
    let max_iters = plan.points.iter().map(|p| p.iters).max().unwrap_or(1);
    let bufs = DeviceBuffers::new(&gpu, &nccl, buffer_sizes(plan.points.iter()), max_iters)?;
    let mut walk = Walk {
        req,
        nccl,
        gpu,
        bufs,
        ctx,
        telemetry: None,
        user,
        version,
        config: comm_config(version, &Default::default()),
        cycle: 0,
        blas,
        gemm: None,
        alone_us: None,
        max_iters,
    };
    if walk.ctx.rank != 0 {
        return walk
            .stages(&stages, None)
            .map(|()| None)
            .map_err(|e| walk.ctx.blame(e));
    }
    let (meta, topo) = run_meta(req, &opts, &walk.nccl, (hosts, gpus))?;
    let ordered = Plan {
        points: stages.iter().flat_map(stage_points).cloned().collect(),
        notes: plan.notes,
        soak: plan.soak,
    };
    let lead = Lead::open(walk.ctx.out.clone(), &meta, &ordered, &req.view)?;
    let mut writer = PointWriter { lead, topo };
    let result = writer
        .lead
        .out
        .add_telemetry()
        .and_then(|()| walk.stages(&stages, Some(&mut writer)))
        .map_err(|e| walk.ctx.blame(e));
    writer.lead.close(result).map(Some)
}

/// Refuses, before anything is measured, a plan with a dtype, reduction or op the loaded
/// library cannot run (bf16 and avg need NCCL 2.10.3, fp8 2.24.3, mulsum
/// `ncclRedOpCreatePreMulSum`; AllToAll and SendRecv need `ncclSend`/`ncclRecv`, NCCL 2.7+);
/// the error names the version.
fn check_library(nccl: &Nccl, stages: &[Stage]) -> Result<()> {
    use crate::backend::nccl::map::{check_dtype, check_redop};
    let version = nccl.version().map_err(|e| Error::Rank(e.to_string()))?;
    let pre_mul_sum = nccl.red_op_create_pre_mul_sum.is_some();
    for p in stages.iter().flat_map(stage_points) {
        let c = &p.call;
        check_dtype(c.dtype, version).map_err(Error::Usage)?;
        if c.op.reduces() {
            check_redop(c.redop, version, pre_mul_sum).map_err(Error::Usage)?;
        }
    }
    match stages
        .iter()
        .flat_map(stage_points)
        .map(|p| p.call.op)
        .find(|op| op.nccl_point_to_point() && !nccl.native(*op))
    {
        Some(op) => nccl
            .point_to_point(op.name())
            .map(drop)
            .map_err(|e| Error::Usage(e.to_string())),
        None => Ok(()),
    }
}

fn stage_points(s: &Stage) -> impl Iterator<Item = &Point> {
    s.groups.iter().flat_map(|(_, p)| p.iter())
}

impl Walk<'_> {
    fn stall(&self) -> Duration {
        self.req.timeout
    }

    fn mode(&self) -> LaunchMode {
        if self.req.cuda_graph {
            LaunchMode::Graph
        } else {
            LaunchMode::Stream
        }
    }

    /// Every stage, in every cycle of a soak (each cycle creates its communicators again).
    fn stages(&mut self, stages: &[Stage], mut lead: Option<&mut PointWriter>) -> Result<()> {
        let (soak, began) = (self.req.opts.soak, std::time::Instant::now());
        for cycle in 0u64.. {
            if cycle > 0 && !self.another_cycle(&soak, cycle, began.elapsed())? {
                return Ok(());
            }
            self.cycle = cycle;
            self.cycle_stages(stages, lead.as_deref_mut())?;
        }
        Ok(())
    }

    /// Whether cycle `done` starts: counted by every rank, or rank 0's word through the store
    /// where its clock decides.
    fn another_cycle(&mut self, soak: &Soak, done: u64, elapsed: Duration) -> Result<bool> {
        let mine = soak.another(done, elapsed);
        if !soak.lead_decides() {
            return Ok(mine);
        }
        let words = self.ctx.store.all_gather("nccl-soak", &[u8::from(mine)])?;
        Ok(words.first().and_then(|w| w.first()) == Some(&1))
    }

    /// One cycle: every combination in turn, its NCCL variables set while no thread of ours
    /// runs.
    fn cycle_stages(&mut self, stages: &[Stage], mut lead: Option<&mut PointWriter>) -> Result<()> {
        for (k, stage) in stages.iter().enumerate() {
            let vars = tuning::env_for(stage.algo, stage.proto, &self.user);
            // The sampler thread is joined first: no thread of ours runs while the environment
            // changes (setenv is not safe beside a thread that reads it).
            self.telemetry = None;
            tuning::apply_env(&vars);
            self.config = comm_config(self.version, &stage.setup);
            self.telemetry = Some(point_telemetry::start(self.ctx.rank, &self.gpu));
            self.stage(k, stage, lead.as_deref_mut())
                .map_err(|e| with_env(e, &vars))?;
        }
        Ok(())
    }

    /// One combination: its world communicator, a group per world size, every point.
    fn stage(&mut self, k: usize, stage: &Stage, mut lead: Option<&mut PointWriter>) -> Result<()> {
        // A key per cycle: the store keeps an earlier cycle's id under the same name.
        let world = self.init(&format!("nccl-id-{}-{k}", self.cycle), self.ctx.world)?;
        let mut world = world.ok_or_else(|| Error::Rank("no world communicator".into()))?;
        self.register(&mut world, stage)?;
        let mut splits = SplitComms::make(&world, stage, self.nccl.has_split())?;
        for comm in splits.each_mut() {
            self.register(comm, stage)?;
        }
        for (w, points) in &stage.groups {
            // Every rank plans alike, so all skip the split of a world only --split points use.
            let mut sub = match points.iter().any(|p| p.split.is_none()) {
                true => self.group(&world, k, *w)?,
                false => None,
            };
            if let Some(sub) = &mut sub {
                self.register(sub, stage)?;
            }
            let comm = if *w == self.ctx.world {
                Some(&world)
            } else {
                sub.as_ref()
            };
            for p in points {
                let p = &p.in_cycle(self.cycle);
                let comm = if p.split.is_some() {
                    splits.member(p)
                } else {
                    comm
                };
                self.point(comm, p, stage, lead.as_deref_mut())?;
            }
            if let Some(sub) = sub {
                sub.destroy().map_err(|e| Error::Rank(e.to_string()))?;
            }
        }
        splits.destroy()?;
        world.destroy().map_err(|e| Error::Rank(e.to_string()))
    }

    /// Registers both buffers with `comm` as the stage asks, as nccl-tests `-R 1` (local,
    /// `ncclCommRegister`) or `-R 2` (symmetric, `ncclCommWindowRegister`, collective) does.
    fn register(&self, comm: &mut Communicator, stage: &Stage) -> Result<()> {
        let registration = stage.setup.registration();
        for (addr, len) in self.bufs.regions() {
            let rank = comm.rank();
            match registration {
                Register::None => return Ok(()),
                Register::Local => comm.register(addr, len),
                Register::Symmetric => comm.register_window(addr, len),
            }
            .map_err(|e| Error::Rank(format!("rank {rank}: {e}")))?;
        }
        Ok(())
    }

    /// A fresh communicator of the first `n` ranks from a unique id that rank 0 creates and
    /// shares under `key`; `None` on ranks outside it.
    fn init(&mut self, key: &str, n: usize) -> Result<Option<Communicator>> {
        if self.ctx.rank >= n {
            return Ok(None);
        }
        let id = share_id(&self.nccl, &mut self.ctx.store, self.ctx.rank, key)?;
        join(&self.nccl, n, &id, self.ctx.rank, &self.config).map(Some)
    }

    /// The communicator of the first `w` ranks within `world`: split from it (every rank takes
    /// part) where NCCL has ncclCommSplit, else a fresh one. `None` for the full world (use
    /// `world` itself) and on non-members.
    fn group(&mut self, world: &Communicator, k: usize, w: usize) -> Result<Option<Communicator>> {
        if w == self.ctx.world {
            return Ok(None);
        }
        if !self.nccl.has_split() {
            return self.init(&format!("nccl-id-{}-{k}-{w}", self.cycle), w);
        }
        let color = tuning::split_color(self.ctx.rank, w);
        world
            .split(color, w, self.ctx.rank)
            .map_err(|e| Error::Rank(e.to_string()))
    }

    /// Measures `p` where a member, then gathers every rank's part to rank 0, which writes it.
    fn point(
        &mut self,
        comm: Option<&Communicator>,
        p: &Point,
        stage: &Stage,
        lead: Option<&mut PointWriter>,
    ) -> Result<()> {
        if let Some(l) = &lead {
            l.lead.console.running(&format!(
                "{} proto {}{}",
                p.describe(),
                stage.proto,
                stage.setup.label()
            ));
        }
        let mut payload = vec![0u64];
        let mut ran = None;
        let mut gpu_points = Vec::new();
        let how = Timing {
            mode: self.mode(),
            agg: self.req.opts.loop_timing.agg,
            blocking: self.req.opts.loop_timing.blocking,
            stall: self.stall(),
            graph_launches: self.req.graph_launches,
        };
        // Every rank meets the members before their loop of back-to-back calls (nccl-tests'
        // barrier before its timed loop); ranks outside the point meet them there too.
        let store = &mut self.ctx.store;
        let mut barrier = || store.barrier("nccl-loop");
        if comm.is_none() {
            for _ in 0..barriers_of(p) {
                barrier()?;
            }
        }
        if let Some(comm) = comm {
            let m = Member {
                comm,
                me: comm.rank(),
                size: p.world,
            };
            if let Some(t) = &mut self.telemetry {
                t.begin_point();
            }
            if let (Some(_), None, Some(blas)) = (p.compute, &self.gemm, &self.blas) {
                self.gemm = Some(GemmLoad::new(&self.gpu, blas.clone(), self.max_iters)?);
            }
            let beside = match (p.compute, self.gemm.as_mut()) {
                (Some(_), Some(load)) => Some(Beside {
                    load,
                    target_us: self.alone_us.unwrap_or(UNKNOWN_ALONE_US) * how.agg.max(1) as f64,
                }),
                _ => None,
            };
            let measured = measure(&self.gpu, &mut self.bufs, &m, p, how, &mut barrier, beside)
                .map_err(|e| at_point(e, p))?;
            if p.compute.is_none() {
                let mut times = measured.times.clone();
                self.alone_us = (!times.is_empty()).then(|| crate::stats::median_of(&mut times));
            }
            if let Some(t) = &mut self.telemetry {
                gpu_points = t.end_point(point_telemetry::calls(p, self.req.opts.loop_timing.agg));
            }
            payload = encode_part(&measured);
            ran = measured.ran;
        }
        let bytes: Vec<u8> = payload.iter().flat_map(|w| w.to_le_bytes()).collect();
        let all = self.ctx.store.all_gather("nccl-point", &bytes)?;
        let telemetry = point_telemetry::encode(&gpu_points);
        let telemetry = self.ctx.store.all_gather("nccl-telemetry", &telemetry)?;
        match lead {
            Some(l) => {
                l.lead
                    .out
                    .append_telemetry(&point_telemetry::rows(&telemetry))?;
                l.write(p, stage, &all, self.nccl.call_name(p.call.op), ran)
            }
            None => Ok(()),
        }
    }
}

/// The call's time alone taken where none was measured before a point with a load (the plan
/// measures every point alone just before, so only a failed measurement leaves this).
const UNKNOWN_ALONE_US: f64 = 100.0;

#[cfg(test)]
#[path = "rank_tests.rs"]
mod tests;
