//! What one rank process does: expand the same plan as the launcher, and for each point meet
//! every rank at a barrier, measure if it belongs to the point's group, publish its samples in
//! the shared segment, and let rank 0 tell the launcher the point is ready.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::backend::buffers::CallBuffers;
use crate::backend::host::affinity;
use crate::backend::host::algo::{barrier, Buffers, Group};
use crate::backend::host::compute::ComputeLoad;
use crate::backend::host::layout::{Layout, Shared};
use crate::backend::host::transport::shm::ShmTransport;
use crate::backend::host::transport::tcp::TcpTransport;
use crate::backend::host::transport::Transport;
use crate::backend::host::wait::{futex_wake_all, Sleeper, WaitPolicy};
use crate::backend::host::{self};
use crate::check::{count_wrong_with, fill_input};
use crate::collective::uneven::RankCounts;
use crate::error::{Error, Result};
use crate::model::plan::{ComputeKind, Plan, Point, SweepOptions, TransportKind};
use crate::sweep::roles::{Lanes, Roles};

/// Where a rank process finds its segment and who it is.
#[derive(Clone, Copy, Debug)]
pub struct RankArgs {
    pub rank: usize,
    pub fd: i32,
    pub layout: Layout,
}

/// The rank's call buffers and the algorithms' scratch, both grown once to the largest point so
/// timed loops never allocate.
#[derive(Default)]
pub(crate) struct RankBuffers {
    io: CallBuffers,
    scratch: Vec<u8>,
    /// The rank's counts of the point's alltoallv, set before it is measured.
    counts: Option<RankCounts>,
    /// The CPU a `--with-compute` load is pinned to (`None`: unpinned).
    pub compute_cpu: Option<usize>,
}

/// Runs the rank's whole sweep and returns its exit code: 0, or 2 after leaving its error in
/// the segment for the launcher, which reports one line for the whole launch (a failing rank's
/// peers fail too, and the launcher picks the cause). Only a segment that cannot be attached is
/// an `Err`, printed by the caller.
pub fn rank_main(args: RankArgs, opts: &SweepOptions) -> Result<u8> {
    let shared = Rc::new(Shared::attach(args.fd, args.layout)?);
    match run_rank(args, opts, &shared) {
        Ok(()) => Ok(0),
        Err(e) => {
            shared.set_error(args.rank, &e.to_string());
            Ok(2)
        }
    }
}

fn run_rank(args: RankArgs, opts: &SweepOptions, shared: &Rc<Shared>) -> Result<()> {
    let cpus = affinity::allowed_cpus();
    let plan = opts.plan();
    let lanes = Lanes::of(&plan, opts.ranks);
    if lanes.processes() != args.layout.nranks {
        return Err(Error::Rank(format!(
            "rank process {}: the launch has {} processes where the plan needs {}",
            args.rank,
            args.layout.nranks,
            lanes.processes()
        )));
    }
    // A lane is bound as one more rank would be (see `roles`).
    if let Some(cpu) = affinity::cpu_for_rank(opts.bind, args.rank, &cpus) {
        if let Err(e) = affinity::bind_to(cpu) {
            crate::say!(
                "collbench: {} runs unbound: pinning to CPU {cpu} failed: {e}",
                lanes.name(args.rank)
            );
        }
    }
    let cores = cpus.len().max(1);
    match opts.transport {
        TransportKind::Shm => {
            let policy = WaitPolicy::for_load(args.layout.nranks, cores);
            let mut t = ShmTransport::new(shared.clone(), args.rank, policy);
            sweep_points(&mut t, shared, (opts, &plan, lanes))
        }
        TransportKind::Tcp => {
            let mut t = tcp_mesh(shared, args.rank)?;
            sweep_points(&mut t, shared, (opts, &plan, lanes))
        }
    }
}

/// How long ranks wait for each other to publish their listener and connect.
const MESH_TIMEOUT: Duration = Duration::from_secs(30);

/// Connects this rank to every other over loopback TCP: listen on an ephemeral port, publish
/// it in the segment, wait for every rank's port, then build the mesh with the launch's token.
fn tcp_mesh(shared: &Shared, rank: usize) -> Result<TcpTransport> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| Error::Rank(format!("rank {rank}: cannot listen on loopback: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::Rank(format!("rank {rank}: listener address: {e}")))?
        .port();
    shared
        .listen_port(rank)
        .store(port as u32, Ordering::SeqCst);
    let n = shared.layout.nranks;
    let deadline = Instant::now() + MESH_TIMEOUT;
    let mut peers = Vec::with_capacity(n);
    for r in 0..n {
        let port = loop {
            let p = shared.listen_port(r).load(Ordering::SeqCst);
            if p != 0 {
                break p as u16;
            }
            if shared.abort_flag().load(Ordering::Relaxed) != 0 || Instant::now() > deadline {
                return Err(Error::Rank(format!(
                    "rank {rank}: rank {r} never published its TCP port"
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        peers.push(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    let token = shared.token().load(Ordering::SeqCst);
    TcpTransport::connect(rank, n, listener, &peers, token, MESH_TIMEOUT)
}

/// Every point of the plan, in order, in every cycle of a soak: meet all ranks, measure if in
/// the point's group, meet again, and (rank 0) tell the launcher the samples are ready.
fn sweep_points<T: Transport>(
    t: &mut T,
    ctl: &Shared,
    (opts, plan, lanes): (&SweepOptions, &Plan, Lanes),
) -> Result<()> {
    let rank = t.rank();
    let all = Group::first(t.nranks(), rank)
        .ok_or_else(|| Error::usage(format!("rank {rank} outside the launch")))?;
    let mut bufs = RankBuffers {
        compute_cpu: compute_cpu(opts, rank, t.nranks()),
        ..Default::default()
    };
    let soak = opts.soak;
    let mut k = 0u32;
    for cycle in 0u64.. {
        let counted = !soak.lead_decides();
        if cycle > 0
            && counted
            && !soak.another_counted(cycle, Duration::ZERO, plan.points.len(), 32)
        {
            break;
        }
        for (i, point) in plan.points.iter().enumerate() {
            if rank == 0 {
                wait_consumed(ctl, k)?;
            }
            barrier(t, &all)?;
            // The launcher's word at a cycle's start: go on, or the soak is over.
            let starts = cycle > 0 && i == 0 && !counted;
            if starts && ctl.points_consumed().load(Ordering::SeqCst) == SOAK_OVER {
                return Ok(());
            }
            if let Some((roles, call)) = lanes.part(point, rank) {
                let progress = || {
                    ctl.progress(rank).fetch_add(1, Ordering::Relaxed);
                };
                let m = measure(t, &roles, call, &mut bufs, &progress)?;
                publish(ctl, rank, &m);
            }
            barrier(t, &all)?;
            k += 1;
            if rank == 0 {
                let published = ctl.points_published();
                published.store(k, Ordering::SeqCst);
                futex_wake_all(published);
            }
        }
    }
    Ok(())
}

/// Where rank `rank`'s compute load runs under `--bind core`: the core the rank `rank + n` would
/// have, so that with at least twice as many cores as ranks the load has a core of its own,
/// and with fewer it shares one as any extra rank would.
fn compute_cpu(opts: &SweepOptions, rank: usize, nranks: usize) -> Option<usize> {
    let cpus = affinity::allowed_cpus();
    affinity::cpu_for_rank(opts.bind, rank + nranks, &cpus)
}

/// What the launcher stores as the points consumed when a soak ends at a cycle's end.
pub(crate) const SOAK_OVER: u32 = u32::MAX;

/// Rank 0 waits until the launcher has read the previous point's samples.
fn wait_consumed(sh: &Shared, k: u32) -> Result<()> {
    let sleeper = Sleeper {
        doorbell: sh.doorbell(0),
        sleeping: sh.sleeping(0),
        abort: sh.abort_flag(),
    };
    let policy = WaitPolicy::new(1000, 10);
    sleeper
        .wait(&policy, None, || {
            sh.points_consumed().load(Ordering::Acquire) >= k
        })
        .map_err(|_| Error::Rank("rank 0: run aborted by the launcher".into()))
}

/// Puts this rank's samples, then its loop time in the slot after them, and its wrong count
/// where the launcher reads them (the launcher sizes the area one slot longer than any point's
/// iterations).
fn publish(ctl: &Shared, rank: usize, m: &Measured) {
    let samples = ctl.samples_ptr(rank);
    let (during, alone) = m.compute.unwrap_or((f64::NAN, f64::NAN));
    let after = [m.loop_us, during, alone];
    let slots = m.times.iter().chain(&after);
    for (i, &us) in slots.take(ctl.layout.max_iters).enumerate() {
        // SAFETY: this rank's own sample area, max_iters long; the launcher reads it only after
        // the point is published.
        unsafe { samples.add(i).write(us) };
    }
    ctl.wrong(rank).store(m.wrong, Ordering::Relaxed);
}

/// What one rank measured of one point.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Measured {
    /// Its time of every barrier-separated timed iteration, in microseconds.
    pub times: Vec<f64>,
    /// nccl-tests' time of one call ([`time_loop`]), in microseconds.
    pub loop_us: f64,
    /// Wrong elements in its output of the checked call.
    pub wrong: u64,
    /// A `--with-compute` point's compute rate (its kernel's units per second) during the
    /// back-to-back loop, and alone right after.
    pub compute: Option<(f64, f64)>,
}

/// Warm-up, timed iterations, nccl-tests' loop, then the correctness check of one point.
/// `progress` is called after every timed call (the watchdog's heartbeat).
pub(crate) fn measure<T: Transport>(
    t: &mut T,
    roles: &Roles,
    p: &Point,
    bufs: &mut RankBuffers,
    progress: &dyn Fn(),
) -> Result<Measured> {
    let (start, g) = (&roles.start, &roles.call);
    bufs.counts = p.rank_counts(g.me);
    fill(p, g, bufs);
    let load = match p.compute {
        Some(kind) => Some(start_load(kind, bufs.compute_cpu)?.warmed()),
        None => None,
    };
    // Warm-up is no progress for the watchdog: a point's whole warm-up must end within
    // --timeout, so that a warm-up that never ends is seen as a stall.
    for _ in 0..p.warmup {
        barrier(t, start)?;
        call(t, g, p, bufs)?;
    }
    // Allocated before timing so the timed loop never allocates.
    let mut times = Vec::with_capacity(p.iters);
    let agg = p.timing.agg.max(1);
    for _ in 0..p.iters {
        barrier(t, start)?;
        let began = Instant::now();
        // nccl-tests -m: the iteration's calls back to back, each the iteration's share.
        for _ in 0..agg {
            call(t, g, p, bufs)?;
        }
        times.push(began.elapsed().as_nanos() as f64 / 1e3 / agg as f64);
        progress();
    }
    let (loop_us, during) = time_loop(t, roles, p, bufs, (progress, load.as_ref()))?;
    drop(load);
    fill(p, g, bufs);
    barrier(t, g)?;
    call(t, g, p, bufs)?;
    let wrong = check(p, g, bufs);
    let compute = match (p.compute, during) {
        (Some(kind), Some(during)) => {
            let calls = (p.iters * p.timing.agg.max(1)) as f64;
            let span = Duration::try_from_secs_f64(loop_us * calls * 1e-6).unwrap_or_default();
            let alone = start_load(kind, bufs.compute_cpu)?.warmed();
            alone
                .rate_over(span.clamp(COMPUTE_SPAN_MIN, COMPUTE_SPAN_MAX))
                .map(|a| (during, a))
        }
        _ => None,
    };
    Ok(Measured {
        times,
        loop_us,
        wrong,
        compute,
    })
}

/// The shortest and longest a compute load's rate alone is taken over: as long as the loop
/// with the collectives, within these.
const COMPUTE_SPAN_MIN: Duration = Duration::from_millis(5);
const COMPUTE_SPAN_MAX: Duration = Duration::from_secs(1);

fn start_load(kind: ComputeKind, cpu: Option<usize>) -> Result<ComputeLoad> {
    ComputeLoad::start(kind, cpu)
        .map_err(|e| Error::Rank(format!("cannot start the {kind} compute thread: {e}")))
}

/// nccl-tests' timing (`common.cu`, its default): the group leaves one barrier together, then
/// the point's iteration count of calls (times `-m`) runs back to back with no barrier between
/// them, and this rank's wall clock over the loop is divided by the calls. A host call returns
/// when this rank's part is done, so it blocks as nccl-tests `-z 1` does. Also the rate of a
/// compute `load` beside the loop.
fn time_loop<T: Transport>(
    t: &mut T,
    Roles { start, call: g }: &Roles,
    p: &Point,
    bufs: &mut RankBuffers,
    (progress, load): (&dyn Fn(), Option<&ComputeLoad>),
) -> Result<(f64, Option<f64>)> {
    let (iters, agg) = (p.iters.max(1), p.timing.agg.max(1));
    barrier(t, start)?;
    let before = load.map(ComputeLoad::work);
    let start = Instant::now();
    for _ in 0..iters {
        for _ in 0..agg {
            call(t, g, p, bufs)?;
        }
        progress();
    }
    let loop_us = start.elapsed().as_nanos() as f64 / 1e3 / (iters * agg) as f64;
    // The load's rate while the calls ran back to back, the barrier's wait left out.
    let during = (load.zip(before)).and_then(|(l, w)| l.rate_since(w));
    Ok((loop_us, during))
}

fn call<T: Transport>(t: &mut T, g: &Group, p: &Point, bufs: &mut RankBuffers) -> Result<()> {
    let (input, output) = bufs.io.views(&p.call.shape, p.in_place);
    let b = if p.in_place {
        Buffers::InPlace(output)
    } else {
        Buffers::OutOfPlace { input, output }
    };
    host::run(t, g, (&p.call, bufs.counts.as_ref()), b, &mut bufs.scratch)
}

/// Puts the known input pattern where the call reads its input.
fn fill(p: &Point, g: &Group, bufs: &mut RankBuffers) {
    let c = &p.call;
    let target = bufs.io.input_region(c.op, &c.shape, p.in_place, g.me);
    fill_input(c, g.size(), g.me, target);
}

/// Counts wrong elements where the call left its output.
fn check(p: &Point, g: &Group, bufs: &mut RankBuffers) -> u64 {
    let c = &p.call;
    let out = bufs.io.result_region(c.op, &c.shape, p.in_place, g.me);
    count_wrong_with(c, (g.size(), g.me), bufs.counts.as_ref(), out)
}
