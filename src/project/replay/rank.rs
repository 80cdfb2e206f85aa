//! One rank of a replay, on one thread. The schedule is a series of windows: collectives
//! started, then (perhaps) a compute stand-in, then a wait for the collectives. The rank runs a
//! window by noting the compute's deadline (now + its projected duration), running the
//! window's collectives in order with the host backend's ring algorithms, then sleeping (the
//! last 100 us spinning) until the deadline if it has not passed. The window so lasts
//! max(compute, communication) of wall-clock time with the communication really running inside
//! it: the step model's overlap with `overlap_slowdown` 0, which is what a communication stream
//! beside a wall-clock compute stand-in gives.
//!
//! Why not a second thread per rank as the stream: on a machine with fewer cores than threads,
//! a main thread that spins starves its own communication thread, one that yields gets the core
//! back only after other programs' time slices, and every hand-over between the threads is a
//! wake-up (measurements in docs/METHODOLOGY.md, "Replay").
//!
//! Each step starts after a barrier; the rank records its start and end on the machine-wide
//! monotonic clock (the launcher takes the step as first start to last end) and the time it
//! spent inside collectives, puts them in the shared segment at once and counts the step in its
//! progress counter: the launcher's watchdog sees a rank that stops, and an interrupted replay
//! still has every step that all ranks finished.

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::schedule::{largest, Action};
use super::ReplayPlan;
use crate::backend::host::algo::{barrier, Buffers, Group};
use crate::backend::host::layout::Shared;
use crate::backend::host::transport::shm::ShmTransport;
use crate::backend::host::transport::Transport;
use crate::backend::host::wait::WaitPolicy;
use crate::backend::host::{self, affinity};
use crate::collective::{Algo, DType, Op, ReduceOp, Shape};
use crate::error::{Error, Result};
use crate::model::call::Call;
use crate::sweep::rank::RankArgs;

/// Stamps each rank publishes per timed step: start and end (ns on CLOCK_MONOTONIC) and ns
/// spent inside collectives.
pub const STAMPS_PER_STEP: usize = 3;

/// Runs the rank's replay and returns its exit code: 0, or 2 after leaving its error in the
/// segment for the launcher.
pub fn replay_rank_main(args: RankArgs, plan: &ReplayPlan) -> Result<u8> {
    let shared = Rc::new(Shared::attach(args.fd, args.layout)?);
    let cores = affinity::allowed_cpus().len().max(1);
    // Between collectives a replay rank spins to its compute deadlines, so the cores are more
    // crowded than in a sweep of the same world: wait as an oversubscribed rank does (yield at
    // once), never spinning while the peer awaited may need this very core.
    let policy = WaitPolicy::for_load(cores + 1, cores);
    let mut t = ShmTransport::new(shared.clone(), args.rank, policy);
    let mut publish = |step: usize, stamps: [f64; STAMPS_PER_STEP]| {
        publish_step(&shared, args.rank, step, &stamps)
    };
    match run_steps(&mut t, plan, plan.world > cores, &mut publish) {
        Ok(()) => Ok(0),
        Err(e) => {
            shared.set_error(args.rank, &e.to_string());
            Ok(2)
        }
    }
}

/// The rank's collectives: group, buffers sized once for the largest, scratch.
struct Comm<'a, T: Transport> {
    t: &'a mut T,
    g: Group,
    input: Vec<u64>,
    output: Vec<u64>,
    scratch: Vec<u8>,
}

impl<T: Transport> Comm<'_, T> {
    fn run(&mut self, op: Op, bytes: usize) -> Result<()> {
        let call = call(op, bytes, self.g.size());
        let input: &[u8] = bytemuck::cast_slice(&self.input[..]);
        let output: &mut [u8] = bytemuck::cast_slice_mut(&mut self.output[..]);
        let bufs = Buffers::OutOfPlace {
            input: &input[..call.shape.in_bytes],
            output: &mut output[..call.shape.out_bytes],
        };
        host::run(self.t, &self.g, (&call, None), bufs, &mut self.scratch)
    }
}

/// Warm-up steps, then timed steps, each timed step's stamps handed to `publish` (timed step
/// index, stamps) as soon as it ends; after every step the rank's progress counter grows by one,
/// for the launcher's watchdog and so that it knows which steps are complete. `crowded`: more
/// ranks than cores, so a rank spinning to a deadline yields between checks.
fn run_steps<T: Transport>(
    t: &mut T,
    plan: &ReplayPlan,
    crowded: bool,
    publish: &mut dyn FnMut(usize, [f64; STAMPS_PER_STEP]),
) -> Result<()> {
    let rank = t.rank();
    let g = Group::first(plan.world, rank)
        .ok_or_else(|| Error::usage(format!("rank {rank} outside the replay")))?;
    let words = largest(&plan.actions).div_ceil(8).max(1);
    let mut comm = Comm {
        t,
        g,
        input: vec![0; words],
        output: vec![0; words],
        scratch: Vec::new(),
    };
    let mut queued: Vec<(Op, usize)> = Vec::new();
    set_timer_slack();
    for step in 0..plan.warmup + plan.steps {
        barrier(comm.t, &comm.g)?;
        let start = monotonic_ns();
        let mut in_comm = 0.0;
        for a in &plan.actions {
            match *a {
                Action::Start { op, bytes } => queued.push((op, bytes)),
                Action::Compute { s } => {
                    let deadline = Instant::now() + Duration::from_secs_f64(s.max(0.0));
                    in_comm += flush(&mut comm, &mut queued)?;
                    wait_until(deadline, crowded);
                }
                Action::Wait => in_comm += flush(&mut comm, &mut queued)?,
            }
        }
        let end = monotonic_ns();
        if step >= plan.warmup {
            publish(step - plan.warmup, [start, end, in_comm]);
        }
        // The stamps are in place before the count that says so (the launcher reads them after
        // an acquire fence once every rank's count covers the step).
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        comm.t.mark_progress();
    }
    Ok(())
}

/// Runs the queued collectives in order; ns spent.
fn flush<T: Transport>(comm: &mut Comm<'_, T>, queued: &mut Vec<(Op, usize)>) -> Result<f64> {
    if queued.is_empty() {
        return Ok(0.0);
    }
    let start = monotonic_ns();
    for (op, bytes) in queued.drain(..) {
        comm.run(op, bytes)?;
    }
    Ok(monotonic_ns() - start)
}

/// How long before a stand-in's deadline sleeping stops and spinning takes over: enough to
/// cover a timer's wake-up.
const SPIN_TAIL: Duration = Duration::from_micros(100);

/// The rest of a compute stand-in: wall-clock time, slept but for the last [`SPIN_TAIL`],
/// which is spun (yielding between checks when ranks outnumber cores, so a peer still in its
/// collective gets the core). Sleeping leaves the core to others and keeps the scheduler's
/// favour for the collectives that follow; spinning all the way measured slower under load
/// (docs/METHODOLOGY.md, "Replay").
fn wait_until(deadline: Instant, crowded: bool) {
    if let Some(sleep) = deadline.checked_duration_since(Instant::now() + SPIN_TAIL) {
        std::thread::sleep(sleep);
    }
    while Instant::now() < deadline {
        if crowded {
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Timers of this thread fire within 1 us of their deadline (the default slack is 50 us).
fn set_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and affects only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
}

/// Nanoseconds on CLOCK_MONOTONIC, the same clock in every process of the machine.
fn monotonic_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

/// A ring collective of bf16 elements, as the fit's models were measured.
fn call(op: Op, bytes: usize, world: usize) -> Call {
    Call {
        op,
        algo: Algo::Ring,
        dtype: DType::BF16,
        redop: ReduceOp::Sum,
        shape: Shape::new(op, DType::BF16, bytes, world),
        root: 0,
    }
}

/// Puts one timed step's stamps where the launcher reads them.
fn publish_step(shared: &Shared, rank: usize, step: usize, stamps: &[f64; STAMPS_PER_STEP]) {
    let area = shared.samples_ptr(rank);
    let first = step * STAMPS_PER_STEP;
    for (i, &ns) in stamps.iter().enumerate() {
        if first + i < shared.layout.max_iters {
            // SAFETY: this rank's own sample area, max_iters long, written only by this rank;
            // the launcher reads a step only once this rank's progress count covers it.
            unsafe { area.add(first + i).write(ns) };
        }
    }
}
