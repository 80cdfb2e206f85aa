//! Waiting for a peer without burning the core it needs: spin briefly, then yield, then sleep on
//! a futex in the shared segment. Ranks may outnumber cores (8 ranks on 2 cores), so a rank that
//! spins for long would steal the time slice of the very peer it waits for.

use std::cell::Cell;
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

/// The spin/yield budget of a waiter, chosen from how crowded the cores are, and what its
/// recent yields taught it about the machine.
#[derive(Clone, Debug)]
pub struct WaitPolicy {
    /// Busy checks before yielding.
    pub spins: u32,
    /// `sched_yield` rounds before sleeping.
    pub yields: u32,
    /// Waits left that skip yielding, set when a yield went to a process that is not a peer.
    unyielding_waits: Cell<u32>,
}

/// A yield that returns later than this handed the core to a process that kept it for a time
/// slice: a busy process beside the ranks (a yield to a peer rank on the same core costs about
/// 1 µs here, docs/PERFORMANCE.md). Each such yield costs milliseconds, so a futex sleep is
/// cheaper: beside `stress-ng --cpu 2` a 4-rank sweep of small points ran 25 times slower
/// yielding than sleeping. At 50 µs idle peers with work to do tripped it too, and the sleeps
/// that followed made 8 B collectives 20 times slower; at 500 µs idle medians are unchanged.
const SLOW_YIELD: Duration = Duration::from_micros(500);

/// How many waits go straight to sleep after a slow yield before yielding is tried again, so a
/// machine that quiets down gets its fast hand-overs back.
const UNYIELDING_WAITS: u32 = 32;

impl WaitPolicy {
    /// A policy that spins `spins` times, then yields up to `yields` times, then sleeps.
    pub fn new(spins: u32, yields: u32) -> WaitPolicy {
        WaitPolicy {
            spins,
            yields,
            unyielding_waits: Cell::new(0),
        }
    }

    /// A policy for `ranks` processes on `cores` cores.
    pub fn for_load(ranks: usize, cores: usize) -> WaitPolicy {
        if ranks <= cores {
            // Every rank has a core: spinning is cheapest (about 20-50 us before sleeping).
            WaitPolicy::new(20_000, 100)
        } else {
            // Oversubscribed: the awaited peer is likely waiting for this very core, so hand it
            // over at once. A yield to a rank on the same core costs far less than a futex
            // wake-up (an inter-processor interrupt on a VM); measured in docs/PERFORMANCE.md.
            WaitPolicy::new(0, 200)
        }
    }

    /// The yields this wait may make: none for a while after a slow one.
    fn yields_now(&self) -> u32 {
        match self.unyielding_waits.get() {
            0 => self.yields,
            n => {
                self.unyielding_waits.set(n - 1);
                0
            }
        }
    }

    /// Yields until `ready()` or the budget is spent; true if ready.
    fn yield_until(&self, ready: &mut impl FnMut() -> bool) -> bool {
        for _ in 0..self.yields_now() {
            if ready() {
                return true;
            }
            let yielded = Instant::now();
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
            if yielded.elapsed() > SLOW_YIELD {
                self.unyielding_waits.set(UNYIELDING_WAITS);
                return ready();
            }
        }
        false
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
        policy: &WaitPolicy,
        deadline: Option<Instant>,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), WaitError> {
        for _ in 0..policy.spins {
            if ready() {
                return Ok(());
            }
            std::hint::spin_loop();
        }
        if policy.yield_until(&mut ready) {
            return Ok(());
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A rank's doorbell, sleeping flag and the run's abort flag.
    #[derive(Default)]
    struct Words {
        doorbell: AtomicU32,
        sleeping: AtomicU32,
        abort: AtomicU32,
    }

    impl Words {
        fn sleeper(&self) -> Sleeper<'_> {
            Sleeper {
                doorbell: &self.doorbell,
                sleeping: &self.sleeping,
                abort: &self.abort,
            }
        }
    }

    #[test]
    fn after_a_slow_yield_the_next_waits_sleep_at_once_then_yield_again() {
        let policy = WaitPolicy::for_load(4, 2);
        assert_eq!(policy.yields_now(), 200);
        policy.unyielding_waits.set(UNYIELDING_WAITS);
        for wait in 0..UNYIELDING_WAITS {
            assert_eq!(policy.yields_now(), 0, "wait {wait}");
        }
        assert_eq!(policy.yields_now(), 200);
    }

    #[test]
    fn a_condition_already_true_ends_the_wait_without_sleeping() {
        let words = Words::default();
        let sleeper = words.sleeper();
        let mut checks = 0;
        let policy = WaitPolicy::new(0, 0);
        let res = sleeper.wait(&policy, None, || {
            checks += 1;
            true
        });
        assert_eq!((res, checks), (Ok(()), 1));
    }

    #[test]
    fn a_wait_that_is_never_ready_times_out_or_aborts() {
        let words = Words::default();
        let sleeper = words.sleeper();
        let policy = WaitPolicy::for_load(1, 1);
        let soon = Some(Instant::now() + Duration::from_millis(5));
        assert_eq!(
            sleeper.wait(&policy, soon, || false),
            Err(WaitError::TimedOut)
        );
        words.abort.store(1, Ordering::SeqCst);
        assert_eq!(
            sleeper.wait(&policy, None, || false),
            Err(WaitError::Aborted)
        );
        assert_eq!(
            words.sleeping.load(Ordering::SeqCst),
            0,
            "no sleep left announced"
        );
    }
}
