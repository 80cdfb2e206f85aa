//! The launcher side of a replay: one segment, one rank process per rank (the host backend's
//! own launch) watched as a sweep's are (the sweep's watchdog, Ctrl-C and SIGTERM), then the
//! ranks' stamps of every step they all finished.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::rank::STAMPS_PER_STEP;
use super::{ReplayPlan, REPLAY_ENV};
use crate::backend::host::layout::{Layout, Shared};
use crate::error::{Error, Result};
use crate::launch::local::{LocalRanks, RankExit, REPLAY_RANK_SUBCOMMAND};
use crate::sweep::watchdog::{blame, Watchdog};

/// One timed step: first start to last end across the ranks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredStep {
    pub step_s: f64,
    /// The rank that finished last.
    pub last_rank: usize,
    /// Seconds inside collectives, mean over ranks.
    pub comm_s: f64,
}

/// What a replay measured: every timed step that all ranks finished, in order, and why the
/// ranks were stopped when they did not finish them all.
#[derive(Debug)]
pub struct Replayed {
    pub steps: Vec<MeasuredStep>,
    /// Ctrl-C or SIGTERM ([`Error::Interrupted`]), or a rank that ended or stalled.
    pub stopped: Option<Error>,
}

/// The largest plan an environment variable carries (Linux: 128 KiB per string), with room.
const MAX_PLAN_BYTES: usize = 120 * 1024;

/// Set by Ctrl-C or SIGTERM: the launcher stops the ranks and keeps what they measured.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Makes Ctrl-C and SIGTERM stop the replay cleanly, as `collbench sweep` does.
fn install_interrupt_handler() {
    // An error means a handler is already installed (a second replay in one process): keep it.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
}

/// Runs `plan` on `plan.world` rank processes. A rank that completes no step for `stall` is
/// blamed by the sweep's watchdog and every rank is stopped.
pub fn run_ranks(plan: &ReplayPlan, stall: Duration) -> Result<Replayed> {
    crate::backend::host::transport::single_copy::CopyMode::from_env()?;
    let layout = Layout::new(plan.world, STAMPS_PER_STEP * plan.steps);
    let shared = Shared::create(layout)?;
    shared
        .token()
        .store(crate::launch::store::random_token(), Ordering::SeqCst);
    shared.segment().make_inheritable()?;
    let fd = shared.segment().fd();
    let json = serde_json::to_string(plan)
        .map_err(|e| Error::usage(format!("cannot encode the replay plan: {e}")))?;
    if json.len() > MAX_PLAN_BYTES {
        return Err(Error::usage(format!(
            "--replay: the step's schedule ({} actions) is too long to hand to the ranks; give \
             fewer --microbatches or a model with fewer layers",
            plan.actions.len()
        )));
    }
    let args = |r: usize| {
        let a = [
            "--rank".to_string(),
            r.to_string(),
            "--fd".into(),
            fd.to_string(),
            "--layout".into(),
            layout.encode(),
        ];
        a.to_vec()
    };
    install_interrupt_handler();
    let mut ranks = LocalRanks::spawn_with_env(
        plan.world,
        REPLAY_RANK_SUBCOMMAND,
        args,
        &[(REPLAY_ENV, &json)],
    )?;
    let pids: Vec<Option<u32>> = (0..plan.world).map(|r| ranks.pid(r)).collect();
    let stopped = supervise(&mut ranks, &shared, &pids, stall).err();
    if stopped.is_some() {
        shared.abort_flag().store(1, Ordering::SeqCst);
        ranks.kill_all();
    }
    let done = completed_steps(&shared, plan);
    Ok(Replayed {
        steps: steps(&shared, plan, done),
        stopped,
    })
}

/// Waits until every rank has exited with code 0, or says why not: an interruption, a rank
/// that ended otherwise, or one the watchdog found stalled.
fn supervise(
    ranks: &mut LocalRanks,
    shared: &Shared,
    pids: &[Option<u32>],
    stall: Duration,
) -> Result<()> {
    let pid = |r: usize| pids[r].map_or("?".into(), |p| p.to_string());
    let mut dog = Watchdog::new(stall);
    while !ranks.all_exited() {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(Error::Interrupted("the replay's ranks were stopped".into()));
        }
        if let Some((r, exit)) = ranks.poll_exited() {
            match exit {
                RankExit::Code(0) => continue,
                // Ctrl-C to the process group reaches the ranks too, maybe before the handler.
                RankExit::Signal(libc::SIGINT | libc::SIGTERM) => {
                    return Err(Error::Interrupted(format!(
                        "replay rank {r} (pid {}) received {}",
                        pid(r),
                        exit.describe()
                    )))
                }
                _ => {
                    let why = shared.error(r).map_or(String::new(), |m| format!(": {m}"));
                    return Err(Error::Rank(format!(
                        "replay rank {r} (pid {}) ended with {}{why}; the other ranks were stopped",
                        pid(r),
                        exit.describe()
                    )));
                }
            }
        }
        if dog.expired(shared) {
            let stuck = blame(shared, pids);
            return Err(Error::Rank(format!(
                "replay rank {} (pid {}) finished no step for {} ({}); all ranks were stopped",
                stuck.rank,
                pid(stuck.rank),
                humantime::format_duration(stall),
                stuck.reason
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Timed steps every rank has finished (each counts warm-up and timed steps as it ends them).
fn completed_steps(shared: &Shared, plan: &ReplayPlan) -> usize {
    let least = (0..plan.world)
        .map(|r| shared.progress(r).load(Ordering::Relaxed))
        .min()
        .unwrap_or(0);
    // Pairs with the ranks' release fence before their count: the stamps are visible.
    std::sync::atomic::fence(Ordering::Acquire);
    let done = usize::try_from(least).unwrap_or(usize::MAX);
    done.saturating_sub(plan.warmup).min(plan.steps)
}

/// The first `done` timed steps from the ranks' stamps.
fn steps(shared: &Shared, plan: &ReplayPlan, done: usize) -> Vec<MeasuredStep> {
    let n = STAMPS_PER_STEP;
    let stamps: Vec<Vec<f64>> = (0..plan.world)
        .map(|r| {
            // SAFETY: every rank wrote the stamps of its first `done` steps before counting
            // them, and has exited (or been killed): nothing writes the area now.
            unsafe { std::slice::from_raw_parts(shared.samples_ptr(r), n * done) }.to_vec()
        })
        .collect();
    let ranks = plan.world as f64;
    (0..done)
        .map(|k| {
            let at = |i: usize| stamps.iter().map(move |s| s[n * k + i]);
            let first = at(0).fold(f64::MAX, f64::min);
            let (last_rank, last) = at(1)
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((0, first));
            MeasuredStep {
                step_s: (last - first) / 1e9,
                last_rank,
                comm_s: at(2).sum::<f64>() / ranks / 1e9,
            }
        })
        .collect()
}
