//! Spawns N rank processes of this same executable on this host and keeps track of them.
//! Each child asks the kernel to kill it if the launcher dies (PR_SET_PDEATHSIG), so no rank can
//! outlive its launcher, however the launcher ends.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

use crate::error::{Error, Result};

/// The hidden subcommand a rank process of a sweep runs.
pub const RANK_SUBCOMMAND: &str = "__rank";

/// The hidden subcommand a rank process of a projection's replay runs.
pub const REPLAY_RANK_SUBCOMMAND: &str = "__replay-rank";

/// Environment variable carrying the sweep options (JSON) to the ranks.
pub const OPTIONS_ENV: &str = "COLLBENCH_SWEEP_OPTIONS";

/// The rank processes of one launch.
pub struct LocalRanks {
    children: Vec<Option<Child>>,
}

/// How a rank process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankExit {
    Code(i32),
    Signal(i32),
}

impl RankExit {
    pub(crate) fn from_status(s: ExitStatus) -> RankExit {
        match (s.code(), s.signal()) {
            (Some(c), _) => RankExit::Code(c),
            (None, Some(sig)) => RankExit::Signal(sig),
            _ => RankExit::Code(-1),
        }
    }

    /// "exit code 2" or "signal 9 (SIGKILL)".
    pub fn describe(self) -> String {
        match self {
            RankExit::Code(c) => format!("exit code {c}"),
            RankExit::Signal(s) => match signal_name(s) {
                Some(name) => format!("signal {s} ({name})"),
                None => format!("signal {s}"),
            },
        }
    }
}

fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return None,
    })
}

impl LocalRanks {
    /// Starts `n` ranks of the current executable with `args` after the rank subcommand.
    pub fn spawn(
        n: usize,
        args: impl Fn(usize) -> Vec<String>,
        options_json: &str,
    ) -> Result<LocalRanks> {
        Self::spawn_with_env(n, RANK_SUBCOMMAND, args, &[(OPTIONS_ENV, options_json)])
    }

    /// Starts `n` ranks running the hidden `subcommand` (what a rank is to do:
    /// [`RANK_SUBCOMMAND`] or [`REPLAY_RANK_SUBCOMMAND`]) with `args` after it and `env` set
    /// (its sweep options or its replay plan).
    pub fn spawn_with_env(
        n: usize,
        subcommand: &str,
        args: impl Fn(usize) -> Vec<String>,
        env: &[(&str, &str)],
    ) -> Result<LocalRanks> {
        let exe = std::env::current_exe().map_err(|e| Error::Os {
            what: "finding the collbench executable to start ranks".into(),
            source: e,
        })?;
        let launcher = std::process::id() as libc::pid_t;
        // Open until every rank has started (and inherited its memfds, if any).
        let handoff = super::handoff::hand(env)?;
        let mut ranks = LocalRanks {
            children: Vec::with_capacity(n),
        };
        for r in 0..n {
            let mut cmd = Command::new(&exe);
            cmd.arg(subcommand)
                .args(args(r))
                .envs(handoff.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            die_with(&mut cmd, launcher);
            let child = cmd.spawn().map_err(|e| Error::Os {
                what: format!("starting rank {r} ({})", exe.display()),
                source: e,
            });
            match child {
                Ok(c) => ranks.children.push(Some(c)),
                Err(e) => {
                    ranks.kill_all();
                    return Err(e);
                }
            }
        }
        Ok(ranks)
    }

    /// Process id of rank `r`.
    pub fn pid(&self, r: usize) -> Option<u32> {
        self.children.get(r)?.as_ref().map(|c| c.id())
    }

    /// The first rank found to have exited since the last call, and how.
    pub fn poll_exited(&mut self) -> Option<(usize, RankExit)> {
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

    /// The ranks still running (not yet seen to exit).
    pub fn running(&self) -> Vec<usize> {
        (0..self.children.len())
            .filter(|&r| self.children[r].is_some())
            .collect()
    }

    /// Whether every rank has exited (and been reaped).
    pub fn all_exited(&self) -> bool {
        self.children.iter().all(Option::is_none)
    }

    /// Kills and reaps every rank still running. Never fails: this is the cleanup path.
    pub fn kill_all(&mut self) {
        kill_and_reap(&mut self.children);
    }
}

impl Drop for LocalRanks {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Kills every child still in `children` and reaps it, leaving the slots empty (all are
/// killed before any is waited for). Never fails: this is the cleanup path.
pub fn kill_and_reap(children: &mut [Option<Child>]) {
    for child in children.iter_mut().flatten() {
        let _ = child.kill();
    }
    for slot in children.iter_mut() {
        if let Some(mut child) = slot.take() {
            let _ = child.wait();
        }
    }
}

/// Makes the child `cmd` starts die with `launcher` (PR_SET_PDEATHSIG), and exit at once if the
/// launcher is already gone by the time it starts, so no rank outlives the process that
/// supervises it.
pub fn die_with(cmd: &mut Command, launcher: libc::pid_t) {
    // SAFETY: the closure only makes async-signal-safe calls (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::getppid() != launcher {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::RankExit;

    #[test]
    fn exits_describe_themselves() {
        assert_eq!(RankExit::Code(2).describe(), "exit code 2");
        assert_eq!(
            RankExit::Signal(libc::SIGKILL).describe(),
            "signal 9 (SIGKILL)"
        );
        assert_eq!(
            RankExit::Signal(libc::SIGTERM).describe(),
            "signal 15 (SIGTERM)"
        );
        assert_eq!(RankExit::Signal(64).describe(), "signal 64");
    }
}
