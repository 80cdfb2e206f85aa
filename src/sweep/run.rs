//! The launcher side of a sweep on this host: checks the request, creates the results folder and
//! the shared segment, starts the rank processes, then for every point waits for the ranks,
//! reads their samples, writes the point to disk and prints it, before letting them go on.
//! Any failure (a rank that dies or stalls, Ctrl-C) stops every rank and keeps what was written.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::host::compute::load_bytes;
use crate::backend::host::layout::{Layout, Shared};
use crate::backend::host::transport::single_copy::CopyMode;
use crate::error::{Error, Result};
use crate::launch::local::LocalRanks;
use crate::meta::Meta;
use crate::model::call::BackendKind;
use crate::model::plan::{Plan, SweepOptions, TransportKind};
use crate::model::topology::WorldSpec;
use crate::report::run_dir::run_dir_or_default;
use crate::sweep::args::MAX_LOCAL_RANKS;
use crate::sweep::lead::{Lead, Outcome};
use crate::sweep::request::SweepRequest;
use crate::sweep::roles::Lanes;
use crate::units::format_size;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Makes Ctrl-C and SIGTERM stop the sweep cleanly instead of killing the launcher outright.
fn install_interrupt_handler() {
    // An error means a handler is already installed (a second sweep in one process): keep it.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
}

/// The sweep options as a host run's meta.json records them, with `shm_copy` (the copy mode
/// asked for) beside them where messages move over shared memory.
pub fn host_options_json(opts: &SweepOptions) -> serde_json::Value {
    let mut v = serde_json::to_value(opts).unwrap_or_default();
    let shm = opts.transport == TransportKind::Shm;
    if let (true, Some(map)) = (shm, v.as_object_mut()) {
        let mode = CopyMode::from_env().unwrap_or(CopyMode::Auto);
        map.insert("shm_copy".into(), mode.name().into());
    }
    v
}

/// Refuses a request for another backend than the host's: this launcher starts host ranks
/// only; the other backends are reached through `sweep::execute`.
pub fn check_host_backend(req: &SweepRequest) -> Result<()> {
    req.backend.availability().map_err(Error::Usage)?;
    if req.backend != BackendKind::Host {
        return Err(Error::usage(format!(
            "the {0} backend is not measured by the host launcher; run \
             `collbench sweep --backend {0}`",
            req.backend
        )));
    }
    Ok(())
}

/// Runs a whole sweep on the host backend.
pub fn run_sweep(req: &SweepRequest) -> Result<Outcome> {
    check_host_backend(req)?;
    if let Some(WorldSpec::Shape(s)) = req
        .world_specs
        .iter()
        .find(|w| matches!(w, WorldSpec::Shape(s) if s.nodes > 1))
    {
        return Err(Error::usage(format!(
            "--world-sizes {s} spans {} nodes, but this launch is one host; start collbench on \
             every host with mpirun, srun or torchrun (see the README), or give plain sizes",
            s.nodes
        )));
    }
    if let Some(flag) = req.node_mode() {
        return Err(Error::usage(format!(
            "{flag} measures between nodes, but this launch is one host; start collbench on \
             every host with mpirun, srun or torchrun (see the README)"
        )));
    }
    req.opts.validate()?;
    // Checked here so that a bad value is one line from the launcher, not one per rank.
    crate::backend::host::transport::single_copy::CopyMode::from_env()?;
    let plan = req.opts.plan();
    if plan.points.is_empty() {
        return Err(Error::usage(format!(
            "nothing to measure: {}",
            plan.notes.first().map_or("no points", |n| n.as_str())
        )));
    }
    let lanes = Lanes::of(&plan, req.opts.ranks);
    if lanes.processes() > MAX_LOCAL_RANKS {
        return Err(Error::usage(format!(
            "--concurrent runs each of its {} calls at once in a process of every rank: {} \
             ranks need {} processes, more than {MAX_LOCAL_RANKS}; lower --ranks or the entries",
            lanes.lanes,
            lanes.ranks,
            lanes.processes()
        )));
    }
    check_memory(&plan, req.opts.ranks)?;
    let dir = run_dir_or_default(req.out.as_deref(), &req.opts.ops, req.backend.name())?;
    let options = host_options_json(&req.opts);
    let meta = Meta::new(
        req.command_line.clone(),
        BackendKind::Host.name(),
        req.opts.transport.name(),
        req.opts.ranks,
        1,
        options,
    );
    // Before the folder exists: a Ctrl-C from the moment meta.json appears ends the run as
    // interrupted, never with the signal's default death.
    install_interrupt_handler();
    let mut lead = Lead::open(dir, &meta, &plan, &req.view)?;
    let result = launch_and_measure(req, &plan, &mut lead);
    lead.close(result)
}

/// Refuses sizes and iteration counts whose buffers and per-iteration samples would not fit in
/// available memory, before anything is allocated.
fn check_memory(plan: &Plan, ranks: usize) -> Result<()> {
    let Some(avail) = crate::meta::mem_available_bytes() else {
        return Ok(());
    };
    let need = memory_need(plan, ranks);
    // Leave a quarter of what is free for the system, the segment and the page cache.
    if need > avail as u128 * 3 / 4 {
        let largest = plan
            .points
            .iter()
            .map(|p| p.call.shape.bytes)
            .max()
            .unwrap_or(0);
        let iters = plan.points.iter().map(|p| p.iters).max().unwrap_or(0);
        return Err(Error::usage(format!(
            "the largest points need {} of buffers and samples across {ranks} ranks but only {} \
             of memory is available; lower -e (largest size now {}), --iters (now up to {iters}) \
             or --ranks",
            format_size(need.min(usize::MAX as u128) as usize),
            format_size(avail as usize),
            format_size(largest)
        )));
    }
    Ok(())
}

/// Slots after a rank's samples of a point: its loop time, then a `--with-compute` load's rate
/// during the loop and alone (`rank::publish`).
pub(crate) const AFTER_SAMPLES: usize = 3;

/// Bytes the launch needs at its largest: every rank process's buffers for the largest call it
/// makes (each lane's for its own calls), plus the per-iteration samples of the point with the
/// most iterations.
fn memory_need(plan: &Plan, ranks: usize) -> u128 {
    let lanes = Lanes::of(plan, ranks);
    let buffers: u128 = (0..lanes.processes())
        .map(|process| {
            let calls = plan.points.iter().filter_map(|p| lanes.part(p, process));
            calls
                .map(|(_, call)| call.bytes_per_rank())
                .max()
                .unwrap_or(0) as u128
        })
        .sum();
    let max_iters = plan.points.iter().map(|p| p.iters).max().unwrap_or(0);
    let compute = plan
        .points
        .iter()
        .filter_map(|p| p.compute)
        .map(load_bytes)
        .max();
    let loads = compute.unwrap_or(0) as u128 * ranks as u128;
    let samples = (lanes.processes(), max_iters + AFTER_SAMPLES);
    buffers + loads + crate::model::limits::sample_bytes(samples.0, samples.1)
}

fn launch_and_measure(req: &SweepRequest, plan: &Plan, lead: &mut Lead) -> Result<()> {
    let max_iters = plan.points.iter().map(|p| p.iters).max().unwrap_or(1);
    let lanes = Lanes::of(plan, req.opts.ranks);
    let layout = Layout::new(lanes.processes(), max_iters + AFTER_SAMPLES);
    let cores = crate::backend::host::affinity::allowed_cpus().len().max(1);
    if let Some(note) = lanes.note(cores) {
        lead.console.note(&note);
    }
    let shared = Shared::create(layout)?;
    shared
        .token()
        .store(crate::launch::store::random_token(), Ordering::SeqCst);
    shared.segment().make_inheritable()?;
    let fd = shared.segment().fd();
    let opts_json = serde_json::to_string(&req.opts).unwrap_or_default();
    let args = |r: usize| {
        let a = [
            "--rank",
            &r.to_string(),
            "--fd",
            &fd.to_string(),
            "--layout",
            &layout.encode(),
        ];
        a.iter().map(|s| s.to_string()).collect()
    };
    let mut ranks = LocalRanks::spawn(lanes.processes(), args, &opts_json)?;
    let pids: Vec<Option<u32>> = (0..lanes.processes()).map(|r| ranks.pid(r)).collect();
    let mut sup = Supervisor {
        shared: &shared,
        ranks: &mut ranks,
        pids,
        timeout: req.timeout,
        soak: req.opts.soak,
        lanes,
    };
    let result = sup.measure_all(plan, lead).and_then(|()| sup.wait_exit());
    if result.is_err() {
        shared.abort_flag().store(1, Ordering::SeqCst);
        ranks.kill_all();
    }
    result
}

mod supervisor;
use supervisor::Supervisor;
