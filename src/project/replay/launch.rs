//! The launcher side of a replay: one segment, one rank process per rank (the host backend's
//! own launch), then the ranks' step stamps read back once every rank has exited cleanly.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::rank::STAMPS_PER_STEP;
use super::{ReplayPlan, REPLAY_ENV};
use crate::backend::host::layout::{Layout, Shared};
use crate::error::{Error, Result};
use crate::launch::local::{LocalRanks, RankExit};

/// One timed step: first start to last end across the ranks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredStep {
    pub step_s: f64,
    /// The rank that finished last.
    pub last_rank: usize,
    /// Seconds inside collectives, mean over ranks.
    pub comm_s: f64,
}

/// Runs `plan` on `plan.world` rank processes; every timed step, in order.
pub fn run_ranks(plan: &ReplayPlan, timeout: Duration) -> Result<Vec<MeasuredStep>> {
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
    let mut ranks = LocalRanks::spawn_with_env(plan.world, args, &[(REPLAY_ENV, &json)])?;
    let waited = wait_all(&mut ranks, &shared, timeout);
    if waited.is_err() {
        shared.abort_flag().store(1, Ordering::SeqCst);
        ranks.kill_all();
    }
    waited?;
    Ok(steps(&shared, plan))
}

/// Waits until every rank has exited with code 0, or says which did not.
fn wait_all(ranks: &mut LocalRanks, shared: &Shared, timeout: Duration) -> Result<()> {
    let start = Instant::now();
    while !ranks.all_exited() {
        if let Some((r, exit)) = ranks.poll_exited() {
            if exit != RankExit::Code(0) {
                let why = shared.error(r).map_or(String::new(), |m| format!(": {m}"));
                return Err(Error::Rank(format!(
                    "replay rank {r} ended with {}{why}",
                    exit.describe()
                )));
            }
            continue;
        }
        if start.elapsed() > timeout {
            return Err(Error::Rank(format!(
                "the replay did not finish within {}; its ranks were stopped",
                humantime::format_duration(timeout)
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Each timed step from the ranks' stamps.
fn steps(shared: &Shared, plan: &ReplayPlan) -> Vec<MeasuredStep> {
    let n = STAMPS_PER_STEP;
    let stamps: Vec<Vec<f64>> = (0..plan.world)
        .map(|r| {
            // SAFETY: every rank wrote n·steps stamps and exited; nothing writes the area now.
            unsafe { std::slice::from_raw_parts(shared.samples_ptr(r), n * plan.steps) }.to_vec()
        })
        .collect();
    let ranks = plan.world as f64;
    (0..plan.steps)
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
