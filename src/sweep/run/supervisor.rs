//! Watching the ranks of one launch: waits for each point to be published, checks that every rank
//! is alive and moving, reads the point's samples, and names the rank that failed first.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::backend::host::layout::Shared;
use crate::backend::host::wait::{futex_wait, notify};
use crate::error::{Error, Result};
use crate::launch::local::{LocalRanks, RankExit};
use crate::model::call::BackendKind;
use crate::model::plan::{Plan, Point, Soak};
use crate::model::record::PointKey;
use crate::stats::loop_time_of;
use crate::sweep::lead::{Lead, PointRow};
use crate::sweep::rank::SOAK_OVER;
use crate::sweep::roles::Lanes;
use crate::sweep::run::AFTER_SAMPLES;
use crate::sweep::summarize::{place_members, summarize_point};
use crate::sweep::watchdog::{blame, Watchdog};

use super::INTERRUPTED;

/// Watches the ranks of one launch.
pub(super) struct Supervisor<'a> {
    pub(super) shared: &'a Shared,
    pub(super) ranks: &'a mut LocalRanks,
    pub(super) pids: Vec<Option<u32>>,
    pub(super) timeout: Duration,
    pub(super) soak: Soak,
    pub(super) lanes: Lanes,
}

impl Supervisor<'_> {
    pub(super) fn measure_all(&mut self, plan: &Plan, lead: &mut Lead) -> Result<()> {
        let mut dog = Watchdog::new(self.timeout);
        let soak = self.soak;
        let began = Instant::now();
        let n = plan.points.len();
        let mut k = 0u32;
        for cycle in 0u64.. {
            for (i, point) in plan.points.iter().enumerate() {
                let point = &point.in_cycle(cycle);
                lead.console.running(&point.describe());
                let more = |done| soak.another_counted(done, began.elapsed(), n, 32);
                // Ranks leave after the last point only where they can count the cycles.
                let last = i + 1 == n && !soak.lead_decides() && !more(cycle + 1);
                self.wait_published(k + 1, point, last, &mut dog)?;
                let calls = point.calls();
                let rows = (point.rows(BackendKind::Host.name()).into_iter())
                    .map(|(i, members, key)| {
                        // Call i of calls at once ran in lane i of its members.
                        let call = calls.get(i).copied().unwrap_or(point);
                        let processes: Vec<usize> =
                            members.iter().map(|&r| self.lanes.process(i, r)).collect();
                        self.collect(call, (&processes, &members), key)
                    })
                    .collect::<Result<Vec<_>>>()?;
                lead.point_rows(rows)?;
                k += 1;
                let over = i + 1 == n && !more(cycle + 1);
                let word = if over && soak.lead_decides() {
                    SOAK_OVER
                } else {
                    k
                };
                self.shared.points_consumed().store(word, Ordering::SeqCst);
                notify(self.shared.doorbell(0), self.shared.sleeping(0));
                dog.kick();
                if over {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Waits until the ranks publish point `want` (1-based); `last` when it is the last point.
    fn wait_published(
        &mut self,
        want: u32,
        point: &Point,
        last: bool,
        dog: &mut Watchdog,
    ) -> Result<()> {
        let published = self.shared.points_published();
        loop {
            let now = published.load(Ordering::Acquire);
            if now >= want {
                return Ok(());
            }
            self.check_health(&point.describe(), last, dog)?;
            // Rank 0 publishes before it exits, so once every rank has been reaped the count is
            // final: waiting longer would only wait for the watchdog.
            if self.ranks.all_exited() && published.load(Ordering::Acquire) < want {
                return Err(Error::Rank(format!(
                    "every rank exited before finishing {}",
                    point.describe()
                )));
            }
            futex_wait(published, now, Duration::from_millis(20));
        }
    }

    /// Errors if the user interrupted, a rank ended, or the ranks stalled past the timeout.
    /// During the `last` point a rank may finish cleanly: the others leave the final barrier
    /// and exit before rank 0 has published the point, so exit code 0 is no failure then.
    fn check_health(&mut self, during: &str, last: bool, dog: &mut Watchdog) -> Result<()> {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(Error::Interrupted(format!("stopped during {during}")));
        }
        if let Some(first) = self.ranks.poll_exited() {
            let (r, exit) = self.cause(first);
            // Ctrl-C or SIGTERM sent to the whole process group reaches the ranks too, and one
            // of them may be seen dead before the launcher's own handler has run.
            if let RankExit::Signal(sig @ (libc::SIGINT | libc::SIGTERM)) = exit {
                return Err(Error::Interrupted(format!(
                    "{} (pid {}) received {} during {during}",
                    self.lanes.name(r),
                    self.pid_text(r),
                    RankExit::Signal(sig).describe()
                )));
            }
            if last && exit == RankExit::Code(0) {
                return Ok(());
            }
            return Err(Error::Rank(format!(
                "{} (pid {}) ended with {} during {during}{}; the other ranks were stopped",
                self.lanes.name(r),
                self.pid_text(r),
                exit.describe(),
                self.rank_error(r)
            )));
        }
        if dog.expired(self.shared) {
            let stuck = blame(self.shared, &self.pids);
            // A stopped or dead process explains itself; a live one may be in a long warm-up.
            let hint = if stuck.reason.starts_with("process is") {
                ""
            } else {
                " (a point's warm-up must end within --timeout: raise it, or lower --warmup)"
            };
            return Err(Error::Rank(format!(
                "{} (pid {}) made no progress for {} during {during} ({}); all ranks were \
                 stopped{hint}",
                self.lanes.name(stuck.rank),
                self.pid_text(stuck.rank),
                humantime::format_duration(self.timeout),
                stuck.reason
            )));
        }
        Ok(())
    }

    fn pid_text(&self, r: usize) -> String {
        self.pids
            .get(r)
            .copied()
            .flatten()
            .map_or("?".into(), |p| p.to_string())
    }

    /// Reads the samples and wrong counts of `members` (global ranks, in group order) from the
    /// segment, where their `processes` left them: the record of their call, keyed `key`.
    fn collect(
        &self,
        p: &Point,
        (processes, members): (&[usize], &[usize]),
        key: PointKey,
    ) -> Result<PointRow> {
        let iters = p.iters.min(self.shared.layout.max_iters);
        let rank_times: Vec<Vec<f64>> = (processes.iter())
            .map(|&r| {
                // SAFETY: the ranks wrote `iters` samples and published the point; they do not
                // touch the area again until we store points_consumed.
                unsafe { std::slice::from_raw_parts(self.shared.samples_ptr(r), iters) }.to_vec()
            })
            .collect();
        let wrong: Vec<u64> = (processes.iter())
            .map(|&r| self.shared.wrong(r).load(Ordering::Relaxed))
            .collect();
        // The loop time is in the slot after the samples (`publish`).
        let loops: Vec<f64> = (processes.iter())
            .filter(|_| iters < self.shared.layout.max_iters)
            // SAFETY: as above; the area is max_iters long and `iters` is below it.
            .map(|&r| unsafe { self.shared.samples_ptr(r).add(iters).read() })
            .collect();
        let mut summarized = summarize_point(key, p, &rank_times, &wrong)?;
        summarized.0.loop_time_us = loop_time_of(&loops, p.timing.rank);
        if p.compute.is_some() {
            summarized.0.compute_slowdown = self.compute_slowdown(processes, iters);
        }
        place_members(&mut summarized, members);
        Ok(summarized)
    }

    /// The median over `processes` of their compute load's rate alone over its rate during the
    /// loop (the two slots after the loop time); `None` where no rank has both.
    fn compute_slowdown(&self, processes: &[usize], iters: usize) -> Option<f64> {
        if iters + AFTER_SAMPLES > self.shared.layout.max_iters {
            return None;
        }
        let mut ratios: Vec<f64> = (processes.iter())
            // SAFETY: as in `collect`; the slots lie within the area, checked above.
            .map(|&r| unsafe {
                let at = self.shared.samples_ptr(r).add(iters + 1);
                at.add(1).read() / at.read()
            })
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        (!ratios.is_empty()).then(|| crate::stats::median_of(&mut ratios))
    }

    /// The rank whose exit is the cause, given the first exit seen. A rank that dies takes its
    /// peers down within milliseconds (over TCP they see the connection close), and any of them
    /// may be reaped first; so exits are gathered for a moment and a death by signal is blamed
    /// before an exit with an error code.
    fn cause(&mut self, first: (usize, RankExit)) -> (usize, RankExit) {
        if first.1 == RankExit::Code(0) {
            return first;
        }
        let mut seen = vec![first];
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until && !self.ranks.all_exited() {
            match self.ranks.poll_exited() {
                Some(e) => seen.push(e),
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        let by_signal = seen.iter().find(|(_, e)| matches!(e, RankExit::Signal(_)));
        by_signal.copied().unwrap_or(first)
    }

    /// ": <message>" when rank `r` left an error message in the segment, else "".
    fn rank_error(&self, r: usize) -> String {
        match self.shared.error(r) {
            Some(msg) => format!(": {}", msg.trim_start_matches(&format!("rank {r}: "))),
            None => String::new(),
        }
    }

    /// After the last point every rank must exit cleanly within the timeout.
    pub(super) fn wait_exit(&mut self) -> Result<()> {
        let start = Instant::now();
        while !self.ranks.all_exited() {
            if let Some((r, exit)) = self.ranks.poll_exited() {
                if exit != RankExit::Code(0) {
                    return Err(Error::Rank(format!(
                        "{} (pid {}) ended with {} after the last point{}",
                        self.lanes.name(r),
                        self.pid_text(r),
                        exit.describe(),
                        self.rank_error(r)
                    )));
                }
                continue;
            }
            if start.elapsed() > self.timeout {
                let left: Vec<String> = self
                    .ranks
                    .running()
                    .into_iter()
                    .map(|r| format!("{} (pid {})", self.lanes.name(r), self.pid_text(r)))
                    .collect();
                return Err(Error::Rank(format!(
                    "{} did not exit within {} after the last point; all ranks were stopped",
                    left.join(", "),
                    humantime::format_duration(self.timeout)
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }
}
