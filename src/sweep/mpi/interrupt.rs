//! Ctrl-C and SIGTERM under mpirun. mpirun forwards an interrupt to every rank as SIGTERM and
//! kills them soon after; the ranks are usually blocked inside MPI calls and cannot return to a
//! loop that checks a flag. So every rank handles the signal on ctrlc's own thread: rank 0
//! records the run as `interrupted` in meta.json (the points it wrote stay; it waits for a
//! point being appended to finish) and exits with 130; the other ranks exit half a second
//! later, since Open MPI kills the whole job at once when it sees a rank end first.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::meta::{Meta, RunStatus};

/// Rank 0's results folder and its metadata as of the last written point; `None` elsewhere.
static RUN: Mutex<Option<(PathBuf, Meta)>> = Mutex::new(None);

/// Exit code of an interrupted run (128 + SIGINT), as the other backends use.
const INTERRUPTED_EXIT: i32 = 130;

/// How long a rank other than 0 waits before it exits on a signal.
const FOLLOWER_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Installs the handler on this rank. A handler already installed is kept.
pub fn install() {
    let _ = ctrlc::set_handler(on_signal);
}

/// Holds the lock while rank 0 writes a point, so that the handler sees whole points only.
pub fn writing() -> std::sync::MutexGuard<'static, Option<(PathBuf, Meta)>> {
    RUN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// After a point is written: the folder and the metadata the handler records on a signal.
pub fn record(guard: &mut Option<(PathBuf, Meta)>, dir: PathBuf, meta: &Meta, points: usize) {
    let mut meta = meta.clone();
    meta.points = points;
    *guard = Some((dir, meta));
}

/// Records the run as failed with `msg` (rank 0: in meta.json, keeping the points written),
/// says it in one line and ends this process with `code` at once, without waiting for MPI.
pub fn fail(msg: &str, code: i32) -> ! {
    let mut held = writing();
    let kept = match held.take() {
        Some((dir, mut meta)) => {
            meta.finish(RunStatus::Failed, Some(msg.to_string()));
            if let Err(e) = meta.write(&dir) {
                crate::say!("collbench: {e}");
            }
            format!("; {} point(s) kept in {}", meta.points, dir.display())
        }
        None => String::new(),
    };
    crate::say!("collbench: {msg}{kept}");
    // SAFETY: _exit never returns; the main thread is blocked in MPI and must not be waited
    // on (exit's handlers could).
    unsafe { libc::_exit(code) }
}

fn on_signal() {
    // The lock is held until the process exits: rank 0 cannot append a point that meta.json,
    // written here, would not count.
    let mut held = writing();
    let Some((dir, mut meta)) = held.take() else {
        // Not rank 0 (or nothing to record): give rank 0 time to write before the launcher
        // sees this rank end and kills the job, which it may do with SIGKILL at once.
        std::thread::sleep(FOLLOWER_GRACE);
        std::process::exit(INTERRUPTED_EXIT);
    };
    {
        meta.finish(
            RunStatus::Interrupted,
            Some("interrupted by a signal (Ctrl-C or SIGTERM from the launcher)".into()),
        );
        if let Err(e) = meta.write(&dir) {
            crate::say!("collbench: {e}");
        }
        crate::say!(
            "collbench: interrupted; {} point(s) kept in {}",
            meta.points,
            dir.display()
        );
    }
    std::process::exit(INTERRUPTED_EXIT);
}
