//! The MPI backend's stall watchdog (`--timeout`), as the host backend has one: the ranks block
//! inside MPI calls, so a thread on every rank watches this rank's progress (every call it
//! makes, [`crate::backend::mpi::progress::PROGRESS`]). When nothing moved for `--timeout`, world
//! rank 0 names the rank to blame, records the run as failed in meta.json (the points written
//! stay) and exits with 2, which makes mpirun end the job; the other ranks give rank 0 twice
//! the timeout before they end it themselves (rank 0 may be the one stopped).
//!
//! Blame, as the host backend's: a rank whose process is stopped (`T`) or gone, read from
//! /proc for the ranks on rank 0's machine (same boot id and pid namespace, so a pid is never
//! looked up on the wrong machine); ranks on other machines cannot be inspected and are listed
//! as such.

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::interrupt;
use crate::backend::mpi::progress::PROGRESS;
use crate::sweep::whereabouts::{inspect, machine_id, process_state, Whereabouts};

/// What the stalled run was doing: the point being measured.
static DOING: Mutex<String> = Mutex::new(String::new());

/// Exit code of a run that ended on an error.
const FAILED_EXIT: i32 = 2;

/// Records the point being measured, for the stall message.
pub fn at(point: &str) {
    let mut d = DOING.lock().unwrap_or_else(|p| p.into_inner());
    d.clear();
    d.push_str(point);
}

/// Every rank's whereabouts, gathered on world rank 0 (empty elsewhere).
pub fn gather(world: &SimpleCommunicator) -> Vec<Whereabouts> {
    const LEN: usize = crate::sweep::whereabouts::MAX_MACHINE;
    let mut mine = [0u8; LEN + 4];
    let id = machine_id();
    let n = id.len().min(LEN);
    mine[..n].copy_from_slice(&id.as_bytes()[..n]);
    mine[LEN..].copy_from_slice(&std::process::id().to_le_bytes());
    let root = world.process_at_rank(0);
    if world.rank() != 0 {
        root.gather_into(&mine[..]);
        return Vec::new();
    }
    let mut all = vec![0u8; (LEN + 4) * world.size() as usize];
    root.gather_into_root(&mine[..], &mut all[..]);
    all.chunks_exact(LEN + 4)
        .map(|c| Whereabouts {
            machine: String::from_utf8_lossy(&c[..LEN])
                .trim_end_matches('\0')
                .to_string(),
            pid: u32::from_le_bytes([c[LEN], c[LEN + 1], c[LEN + 2], c[LEN + 3]]),
        })
        .collect()
}

/// Starts the watchdog of world rank `rank` (`ranks` from [`gather`] on rank 0).
pub fn start(timeout: Duration, rank: usize, ranks: Vec<Whereabouts>) {
    let limit = if rank == 0 { timeout } else { 2 * timeout };
    let tick = (timeout / 20).clamp(Duration::from_millis(10), Duration::from_millis(250));
    let spawned = std::thread::Builder::new()
        .name("collbench-stall".into())
        .spawn(move || watch(limit, tick, rank, &ranks));
    if let Err(e) = spawned {
        crate::say!(
            "collbench: mpi rank {rank}: no stall watchdog ({e}); --timeout is not enforced"
        );
    }
}

fn watch(limit: Duration, tick: Duration, rank: usize, ranks: &[Whereabouts]) {
    let mut last = (PROGRESS.load(Ordering::Relaxed), Instant::now());
    loop {
        std::thread::sleep(tick);
        let now = PROGRESS.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > limit {
            break;
        }
    }
    let doing = DOING.lock().map(|d| d.clone()).unwrap_or_default();
    let during = if doing.is_empty() {
        String::new()
    } else {
        format!(" during {doing}")
    };
    let waited = humantime::format_duration(limit);
    if rank != 0 {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!(
                "collbench: mpi rank {rank}: no progress for {waited}{during}, and rank 0 did \
                 not end the run (it may be the one stopped); ending it\n"
            )
            .as_bytes(),
        );
        end(FAILED_EXIT);
    }
    let msg = format!(
        "no progress for {waited}{during}: {} (--timeout)",
        blame(ranks, process_state)
    );
    interrupt::fail(&msg, FAILED_EXIT);
}

/// Ends this process at once: MPI is stuck in the main thread, so nothing may wait for it.
fn end(code: i32) -> ! {
    // SAFETY: _exit takes any status and never returns; stderr is unbuffered in Rust.
    unsafe { libc::_exit(code) }
}

/// Who to blame among `ranks` (index = world rank; rank 0 is this process): the ranks on this
/// machine whose process is stopped or gone, else a sentence saying what could be inspected.
pub fn blame(ranks: &[Whereabouts], state: impl Fn(u32) -> Option<char>) -> String {
    let (found, elsewhere) = inspect(ranks, state);
    if !found.is_empty() {
        let found: Vec<String> = found.into_iter().map(|f| f.1).collect();
        return found.join(", ");
    }
    match elsewhere.len() {
        0 => "every rank's process is running: MPI itself is stuck (a deadlock, or a network \
              that stopped delivering)"
            .to_string(),
        _ => {
            format!(
            "no rank on this machine is stopped or gone; ranks {} run on other machines, which \
             cannot be inspected from here",
            elsewhere.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
        )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(machine: &str, pid: u32) -> Whereabouts {
        Whereabouts {
            machine: machine.into(),
            pid,
        }
    }

    /// Which processes are looked at is whereabouts' (tested there); these are the sentences.
    #[test]
    fn a_stopped_or_gone_rank_on_this_machine_is_named() {
        let ranks = [at("a", 10), at("a", 11), at("a", 12), at("b", 11)];
        let stopped_and_gone = |pid| match pid {
            11 => Some('T'),
            12 => None,
            _ => Some('S'),
        };
        assert_eq!(
            blame(&ranks, stopped_and_gone),
            "rank 1 (pid 11) is stopped, rank 2 (pid 12) has exited"
        );
        let running = |_| Some('R');
        assert_eq!(
            blame(&ranks, running),
            "no rank on this machine is stopped or gone; ranks 3 run on other machines, which \
             cannot be inspected from here"
        );
        assert!(blame(&ranks[..3], running).starts_with("every rank's process is running"));
    }
}
