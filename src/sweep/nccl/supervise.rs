//! The local launcher's watch over its NCCL rank processes: each rank's stderr is relayed line
//! by line, except the one line a failing rank ends with (`collbench: ...`), which is kept so
//! that the launcher's own one-line error names the rank that failed and why. The first rank to
//! fail stops all; Ctrl-C stops all; and a results folder that rank 0 could not close (it was
//! stopped with the others) is closed here, as failed or interrupted, never left `running`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::launch::local::RankExit;
use crate::meta::{Meta, RunStatus, META_FILE};

/// Set by the launcher's Ctrl-C (and SIGTERM) handler.
static STOP: AtomicBool = AtomicBool::new(false);

/// What a rank's stderr starts its final error line with (`crate::cli::exit_code`'s prefix).
const ERROR_PREFIX: &str = "collbench: ";

/// The rank processes of one local launch and the last error line each printed.
pub struct Ranks {
    children: Vec<Option<Child>>,
    errors: Arc<Mutex<Vec<Option<String>>>>,
}

impl Ranks {
    /// Starts `n` copies of this command line, each with its own environment; each dies with
    /// the launcher (PR_SET_PDEATHSIG).
    pub fn spawn(n: usize, env: impl Fn(usize) -> Vec<(&'static str, String)>) -> Result<Ranks> {
        // Before any rank exists: a Ctrl-C from now on is seen by `supervise`, never the
        // default action that would end the launcher without closing the results folder.
        // An error means a handler is already installed: keep it.
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
        let exe = std::env::current_exe().map_err(|e| Error::Os {
            what: "finding the collbench executable to start ranks".into(),
            source: e,
        })?;
        let args: Vec<String> = std::env::args().skip(1).collect();
        let launcher = std::process::id() as libc::pid_t;
        let mut ranks = Ranks {
            children: Vec::with_capacity(n),
            errors: Arc::new(Mutex::new(vec![None; n])),
        };
        for r in 0..n {
            let mut cmd = Command::new(&exe);
            cmd.args(&args)
                .envs(env(r))
                .stdin(Stdio::null())
                .stderr(Stdio::piped());
            if r != 0 {
                cmd.stdout(Stdio::null());
            }
            crate::launch::local::die_with(&mut cmd, launcher);
            let mut child = cmd.spawn().map_err(|e| Error::Os {
                what: format!("starting rank {r} ({})", exe.display()),
                source: e,
            })?;
            if let Some(err) = child.stderr.take() {
                relay(r, err, Arc::clone(&ranks.errors));
            }
            ranks.children.push(Some(child));
        }
        Ok(ranks)
    }

    /// Waits for every rank. Rank 0's exit code is the run's (1: some point had wrong
    /// results); any other failure stops every rank and names the first that failed.
    pub fn supervise(&mut self) -> Result<u8> {
        let mut lead_code = 0u8;
        while self.children.iter().any(Option::is_some) {
            if STOP.load(Ordering::SeqCst) {
                return Err(Error::Interrupted("stopped by a signal".into()));
            }
            let Some((r, exit)) = self.poll() else {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            };
            match exit {
                RankExit::Code(0) => {}
                RankExit::Code(1) if r == 0 => lead_code = 1,
                // Ctrl-C or SIGTERM to the whole process group reaches the ranks too, and one of
                // them may be seen dead before the launcher's own handler has run.
                RankExit::Signal(sig @ (libc::SIGINT | libc::SIGTERM)) => {
                    return Err(Error::Interrupted(format!(
                        "nccl rank {r} received {}",
                        RankExit::Signal(sig).describe()
                    )))
                }
                exit => return Err(self.first_failure(r, exit)),
            }
        }
        Ok(lead_code)
    }

    fn poll(&mut self) -> Option<(usize, RankExit)> {
        for (r, slot) in self.children.iter_mut().enumerate() {
            if let Some(child) = slot {
                if let Ok(Some(status)) = child.try_wait() {
                    *slot = None;
                    return Some((r, RankExit::from_status(status)));
                }
            }
        }
        None
    }

    /// The failure to report: a rank whose process is stopped (its peers stalled waiting for
    /// it) or that died by a signal within a moment of the first failure is the likelier cause
    /// (its peers then fail on their own).
    fn first_failure(&mut self, r: usize, exit: RankExit) -> Error {
        if let Some(stopped) = self.stopped() {
            let said = self.error_of(r, Instant::now() + Duration::from_millis(200));
            let own = format!("rank {r}: ");
            let said = said.map(|s| s.strip_prefix(&own).map(str::to_string).unwrap_or(s));
            return Error::Rank(format!(
                "nccl rank {stopped} is stopped (SIGSTOP or a debugger): the others made no \
                 progress; rank {r} ended with {}{}; the other ranks were stopped",
                exit.describe(),
                said.map(|s| format!(": {s}")).unwrap_or_default()
            ));
        }
        let until = Instant::now() + Duration::from_millis(300);
        let mut cause = (r, exit);
        while Instant::now() < until && !matches!(cause.1, RankExit::Signal(_)) {
            match self.poll() {
                Some(e @ (_, RankExit::Signal(_))) => cause = e,
                Some(_) => {}
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        // Its stderr may still be draining: the error line is the last thing it wrote.
        let said = self.error_of(cause.0, until + Duration::from_millis(200));
        let own = format!("rank {}: ", cause.0);
        let said = said.map(|s| s.strip_prefix(&own).map(str::to_string).unwrap_or(s));
        Error::Rank(format!(
            "nccl rank {} ended with {}{}; the other ranks were stopped",
            cause.0,
            cause.1.describe(),
            said.map(|s| format!(": {s}")).unwrap_or_default()
        ))
    }

    /// The first rank still running whose process is stopped.
    fn stopped(&self) -> Option<usize> {
        self.children.iter().position(|c| {
            c.as_ref().is_some_and(|c| {
                matches!(
                    crate::sweep::whereabouts::process_state(c.id()),
                    Some('T' | 't')
                )
            })
        })
    }

    /// Rank `r`'s error line, waiting until `until` for it to arrive.
    fn error_of(&self, r: usize, until: Instant) -> Option<String> {
        loop {
            let said = self.errors.lock().ok()?.get(r).cloned().flatten();
            if said.is_some() || Instant::now() >= until {
                return said;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills and reaps every rank still running. Never fails: this is the cleanup path.
    pub fn kill_all(&mut self) {
        crate::launch::local::kill_and_reap(&mut self.children);
    }
}

impl Drop for Ranks {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Relays rank `r`'s stderr to ours, keeping its error line (not relayed) for the launcher.
fn relay(
    r: usize,
    stderr: impl std::io::Read + Send + 'static,
    errors: Arc<Mutex<Vec<Option<String>>>>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            match line.strip_prefix(ERROR_PREFIX) {
                Some(msg) => {
                    if let Ok(mut e) = errors.lock() {
                        e[r] = Some(msg.to_string());
                    }
                }
                None => {
                    let _ = writeln!(std::io::stderr().lock(), "{line}");
                }
            }
        }
    });
}

/// Closes the results folder `dir` as `result` ended the launch, where rank 0 left it
/// `running` (it was stopped with the others before it could); a folder rank 0 closed, or
/// none at all, is left as it is. Never fails: the launch's own error is what gets reported.
pub fn close_left_running(dir: &Path, result: &Result<u8>) {
    let Err(e) = result else { return };
    let Ok(mut meta) = Meta::read(&dir.join(META_FILE)) else {
        return;
    };
    if meta.status != RunStatus::Running {
        return;
    }
    let status = match e {
        Error::Interrupted(_) => RunStatus::Interrupted,
        _ => RunStatus::Failed,
    };
    let summary = dir.join(crate::report::summary_csv::SUMMARY_FILE);
    if let Ok(rows) = crate::report::summary_csv::read_summary(&summary) {
        meta.points = rows.len();
    }
    meta.finish(status, Some(e.to_string()));
    let _ = meta.write(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper() -> Option<Child> {
        Command::new("sleep").arg("60").spawn().ok()
    }

    #[test]
    fn a_stopped_rank_is_found_among_running_ones() {
        let mut ranks = Ranks {
            children: vec![sleeper(), sleeper(), sleeper()],
            errors: Arc::new(Mutex::new(vec![None; 3])),
        };
        assert_eq!(ranks.stopped(), None);
        let pid = ranks.children[2].as_ref().unwrap().id() as libc::pid_t;
        // SAFETY: signalling our own child, which is alive (not reaped yet).
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        // The state changes once the kernel delivers the signal: wait for it (a hang limit).
        let limit = Instant::now() + Duration::from_secs(30);
        while ranks.stopped().is_none() && Instant::now() < limit {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(ranks.stopped(), Some(2));
        let e = ranks.first_failure(0, RankExit::Code(2)).to_string();
        assert!(e.starts_with("nccl rank 2 is stopped"), "{e}");
        assert!(e.contains("rank 0 ended with exit code 2"), "{e}");
        ranks.kill_all();
        assert!(ranks.children.iter().all(Option::is_none));
    }
}
