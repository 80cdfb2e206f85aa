//! Notices ranks that stop making progress and names the one to blame.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::backend::host::layout::Shared;

/// Watches the ranks' progress counters.
pub struct Watchdog {
    timeout: Duration,
    last_change: Instant,
    last_total: u64,
}

/// A rank judged to be stuck, with the evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    pub rank: usize,
    /// Why this rank: "stopped", or "others wait for it".
    pub reason: String,
}

impl Watchdog {
    /// A watchdog that fires after `timeout` without any rank completing an iteration.
    pub fn new(timeout: Duration) -> Watchdog {
        Watchdog {
            timeout,
            last_change: Instant::now(),
            last_total: 0,
        }
    }

    /// Resets the clock (e.g. when a point completes).
    pub fn kick(&mut self) {
        self.last_change = Instant::now();
    }

    /// Whether the ranks have been silent for longer than the timeout.
    pub fn expired(&mut self, shared: &Shared) -> bool {
        let total: u64 = (0..shared.layout.nranks)
            .map(|r| shared.progress(r).load(Ordering::Relaxed))
            .sum();
        if total != self.last_total {
            self.last_total = total;
            self.last_change = Instant::now();
        }
        self.last_change.elapsed() > self.timeout
    }
}

/// Picks the rank to blame for a stall: a stopped or zombie process first, then the rank most
/// others are waiting for, then the one with the least progress.
pub fn blame(shared: &Shared, pids: &[Option<u32>]) -> Stuck {
    let n = shared.layout.nranks;
    for (r, pid) in pids.iter().enumerate() {
        if let Some(state) = pid.and_then(process_state) {
            if state == 'T' || state == 't' || state == 'Z' {
                let what = if state == 'Z' { "exited" } else { "stopped" };
                return Stuck {
                    rank: r,
                    reason: format!("process is {what}"),
                };
            }
        }
    }
    let mut waited_on = vec![0usize; n];
    for r in 0..n {
        let w = shared.waiting_on(r).load(Ordering::Relaxed);
        if w >= 0 && (w as usize) < n {
            waited_on[w as usize] += 1;
        }
    }
    let progress = |r: usize| shared.progress(r).load(Ordering::Relaxed);
    let rank = (0..n)
        .max_by_key(|&r| (waited_on[r], std::cmp::Reverse(progress(r))))
        .unwrap_or(0);
    let reason = if waited_on[rank] > 0 {
        format!("{} other rank(s) wait for it", waited_on[rank])
    } else {
        "it has made the least progress".into()
    };
    Stuck { rank, reason }
}

use crate::sweep::whereabouts::process_state;
