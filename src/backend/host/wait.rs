//! Waiting for a peer without burning the core it needs: spin briefly, then yield, then sleep on
//! a futex in the shared segment. Ranks may outnumber cores (8 ranks on 2 cores), so a rank that
//! spins for long would steal the time slice of the very peer it waits for.

use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long one futex sleep lasts before the waiter re-checks the abort flag and its deadline.
const SLEEP_SLICE: Duration = Duration::from_millis(50);

/// Sleeps while `*word == expected`, at most `timeout`. Works across processes (no
/// FUTEX_PRIVATE_FLAG) because the word lives in a MAP_SHARED mapping.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: word points to a live, aligned u32; the kernel only reads it. Spurious returns
    // (EAGAIN, EINTR, ETIMEDOUT) are fine: every caller re-checks its condition.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes every process sleeping on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: as above; FUTEX_WAKE does not dereference beyond the word.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}

/// The spin/yield budget of a waiter, chosen from how crowded the cores are.
#[derive(Clone, Copy, Debug)]
pub struct WaitPolicy {
    /// Busy checks before yielding.
    pub spins: u32,
    /// `sched_yield` rounds before sleeping.
    pub yields: u32,
}

impl WaitPolicy {
    /// A policy for `ranks` processes on `cores` cores.
    pub fn for_load(ranks: usize, cores: usize) -> WaitPolicy {
        if ranks <= cores {
            // Every rank has a core: spinning is cheapest (about 20-50 us before sleeping).
            WaitPolicy {
                spins: 20_000,
                yields: 100,
            }
        } else {
            // Oversubscribed: the awaited peer is likely waiting for this very core, so hand it
            // over at once. A yield to a rank on the same core costs far less than a futex
            // wake-up (an inter-processor interrupt on a VM); measured in docs/PERFORMANCE.md.
            WaitPolicy {
                spins: 0,
                yields: 200,
            }
        }
    }
}

/// Why a wait ended without its condition becoming true.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitError {
    /// The launcher asked every rank to stop.
    Aborted,
    /// The deadline passed.
    TimedOut,
}

/// The pieces of shared state one rank needs to sleep and to be woken.
pub struct Sleeper<'a> {
    /// Incremented by anyone who changes a condition this rank may wait on.
    pub doorbell: &'a AtomicU32,
    /// Non-zero while this rank may be asleep on its doorbell.
    pub sleeping: &'a AtomicU32,
    /// Non-zero when the run is being torn down.
    pub abort: &'a AtomicU32,
}

impl Sleeper<'_> {
    /// Waits until `ready()` is true, the run aborts, or `deadline` passes.
    pub fn wait(
        &self,
        policy: WaitPolicy,
        deadline: Option<Instant>,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), WaitError> {
        for _ in 0..policy.spins {
            if ready() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        for _ in 0..policy.yields {
            if ready() {
                return Ok(());
            }
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
        self.sleep_until(deadline, ready)
    }

    fn sleep_until(
        &self,
        deadline: Option<Instant>,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), WaitError> {
        loop {
            // Announce the sleep before the last check: a peer that publishes after our check
            // sees `sleeping` (both sides use SeqCst) and rings the doorbell.
            self.sleeping.store(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            let ticket = self.doorbell.load(Ordering::SeqCst);
            if ready() {
                self.sleeping.store(0, Ordering::Relaxed);
                return Ok(());
            }
            if self.abort.load(Ordering::Relaxed) != 0 {
                self.sleeping.store(0, Ordering::Relaxed);
                return Err(WaitError::Aborted);
            }
            let slice = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        self.sleeping.store(0, Ordering::Relaxed);
                        return Err(WaitError::TimedOut);
                    }
                    SLEEP_SLICE.min(d - now)
                }
                None => SLEEP_SLICE,
            };
            futex_wait(self.doorbell, ticket, slice);
            self.sleeping.store(0, Ordering::Relaxed);
            if ready() {
                return Ok(());
            }
        }
    }
}

/// Rings a rank's doorbell if it may be asleep. Call after publishing a change it may wait on.
pub fn notify(doorbell: &AtomicU32, sleeping: &AtomicU32) {
    // Pairs with the fence in `sleep_until` (Dekker): either the sleeper sees our change or we
    // see its `sleeping` flag.
    fence(Ordering::SeqCst);
    if sleeping.load(Ordering::SeqCst) != 0 {
        doorbell.fetch_add(1, Ordering::SeqCst);
        futex_wake_all(doorbell);
    }
}
