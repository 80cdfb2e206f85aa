//! Who to blame when a multi-host run fails: the rank that stopped making progress, not the
//! first neighbour that noticed. A rank that gives up (its transport timed out waiting for a
//! peer, or any other error) reports why through rank 0's store before it exits; rank 0 then
//! counts, over those reports and its own error, which rank each was waiting for, and names the
//! rank most waited for that did not report a wait of its own (a stopped or hung process cannot
//! report). As the local launcher's watchdog does with its shared counters.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::launch::store::{StoreClient, StoreServer};
use crate::sweep::whereabouts::{inspect, process_state, Whereabouts};

/// The words every transport's stall error uses before the peer's rank
/// ("timed out after 5s waiting for rank 1 (10.0.0.2:4000)").
pub const WAITING_FOR: &str = "waiting for rank ";

/// The store key under which rank `r` reports its failure.
pub fn report_key(r: usize) -> String {
    format!("collbench-failed-{r}")
}

/// The longest report kept (a stall message is a line; a rank's error is bounded anyway).
pub const MAX_REPORT: usize = 1000;

/// The rank a stall message says it was waiting for.
pub fn waited_for(msg: &str) -> Option<usize> {
    let at = msg.find(WAITING_FOR)? + WAITING_FOR.len();
    let digits: String = msg[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// What NCCL's stall error says (`backend::nccl::gpu::wait_events`): the rank stopped seeing
/// progress but cannot tell which peer it waits for.
pub const NO_PROGRESS: &str = "made no progress";

/// The rank to blame from rank 0's own error and the others' reports (rank, message) in a world
/// of `world` ranks, with the evidence; `None` when nothing points at one. First the rank most
/// waited for by name that did not report a wait of its own; where the stalls name no peer
/// (NCCL's), a rank that reported nothing while others stalled (a stopped or hung process cannot
/// report).
pub fn culprit(own: &str, reports: &[(usize, String)], world: usize) -> Option<(usize, String)> {
    named(own, reports).or_else(|| silent(own, reports, world))
}

fn named(own: &str, reports: &[(usize, String)]) -> Option<(usize, String)> {
    let own = waited_for(own).map(|p| (0, p));
    let waits: Vec<(usize, usize)> = own
        .into_iter()
        .chain(
            reports
                .iter()
                .filter_map(|(r, m)| Some((*r, waited_for(m)?))),
        )
        .collect();
    let waiting: std::collections::BTreeSet<usize> = waits.iter().map(|w| w.0).collect();
    let mut by_peer: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(who, peer) in &waits {
        by_peer.entry(peer).or_default().push(who);
    }
    // A rank that itself reported a wait is a victim, not the cause; the most waited for wins,
    // the lowest rank on a tie.
    let (rank, by) = by_peer
        .into_iter()
        .filter(|(peer, _)| !waiting.contains(peer))
        .max_by_key(|(peer, by)| (by.len(), std::cmp::Reverse(*peer)))?;
    Some((rank, format!("{} timed out waiting for it", list(&by))))
}

fn silent(own: &str, reports: &[(usize, String)], world: usize) -> Option<(usize, String)> {
    let stalled: Vec<usize> = own
        .contains(NO_PROGRESS)
        .then_some(0)
        .into_iter()
        .chain(
            reports
                .iter()
                .filter(|(_, m)| m.contains(NO_PROGRESS))
                .map(|r| r.0),
        )
        .collect();
    let quiet: Vec<usize> = (1..world)
        .filter(|r| !reports.iter().any(|(x, _)| x == r))
        .collect();
    let &first = quiet.first()?;
    if stalled.is_empty() {
        return None;
    }
    let mut why = format!("{} stalled and it reported nothing", list(&stalled));
    if quiet.len() > 1 {
        why += &format!(", nor did {}", list(&quiet[1..]));
    }
    Some((first, why))
}

/// "rank 0, rank 2", at most four named.
fn list(ranks: &[usize]) -> String {
    const NAMED: usize = 4;
    let mut names: Vec<String> = ranks
        .iter()
        .take(NAMED)
        .map(|r| format!("rank {r}"))
        .collect();
    if ranks.len() > NAMED {
        names.push(format!("{} more", ranks.len() - NAMED));
    }
    names.join(", ")
}

/// A rank other than 0, failing with `e`: reports it through rank 0's store before this
/// process exits, so that rank 0 can tell a victim from the cause. Best effort: the store may
/// be gone too.
pub fn report(store: &mut StoreClient, rank: usize, e: &Error) {
    let text = e.to_string();
    let text = &text.as_bytes()[..text.len().min(MAX_REPORT)];
    store.set_timeout(Duration::from_secs(2));
    let _ = store.set(&report_key(rank), text);
}

/// Rank 0, after failing with `msg`: the cause, where one can be named, as "rank 2 (host b)
/// died (...)" or "rank 1 (host a) stopped making progress (...)". In order: ranks whose
/// connection to the store rank 0 serves (`server`, where it does) was lost (dead processes),
/// ranks on this machine whose process is stopped or gone (`ranks`, where known), the others'
/// reports in the store ([`culprit`]). Waits up to `grace` for each kind of evidence.
pub fn explain(
    msg: &str,
    server: Option<&StoreServer>,
    ranks: &[Whereabouts],
    grace: Duration,
    describe: impl Fn(usize) -> String,
) -> Option<String> {
    let dead = server.map(|s| lost(s, grace)).unwrap_or_default();
    if !dead.is_empty() {
        let dead: Vec<String> = dead.into_iter().map(&describe).collect();
        return Some(format!(
            "{} died (closed its connections without a goodbye)",
            dead.join(", ")
        ));
    }
    // Only a stopped process: one that exited may have failed on its own beside this one, and
    // a death is what the store's lost connections tell.
    let (found, _) = inspect(ranks, process_state);
    if let Some((r, _)) = found.iter().find(|f| f.1.ends_with(" is stopped")) {
        return Some(format!(
            "{} is stopped (SIGSTOP or a debugger)",
            describe(*r)
        ));
    }
    let server = server?;
    let reports = collect(server.world(), grace, |r| server.value(&report_key(r)));
    let (rank, why) = culprit(msg, &reports, server.world())?;
    Some(format!(
        "{} stopped making progress ({why})",
        describe(rank)
    ))
}

/// The ranks whose store connection closed without a goodbye, waiting up to `grace` for the
/// store to notice.
fn lost(server: &StoreServer, grace: Duration) -> Vec<usize> {
    let until = Instant::now() + grace;
    let mut lost = server.lost_ranks();
    while lost.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
        lost = server.lost_ranks();
    }
    lost
}

/// Polls `read` for the reports of ranks `1..world` for up to `grace`, returning those present
/// once no new one arrived for a tenth of it. Every pass reads each rank not heard from yet, and
/// the first pass always runs: reports already there are read however late this thread runs.
pub fn collect(
    world: usize,
    grace: Duration,
    read: impl Fn(usize) -> Option<Vec<u8>>,
) -> Vec<(usize, String)> {
    let start = Instant::now();
    let quiet = grace / 10 + Duration::from_millis(20);
    let mut got: BTreeMap<usize, String> = BTreeMap::new();
    let mut last_change = start;
    loop {
        for r in 1..world {
            if got.contains_key(&r) {
                continue;
            }
            if let Some(v) = read(r) {
                let text = String::from_utf8_lossy(&v[..v.len().min(MAX_REPORT)]).into_owned();
                got.insert(r, text);
                last_change = Instant::now();
            }
        }
        if start.elapsed() >= grace || last_change.elapsed() >= quiet {
            return got.into_iter().collect();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rank_waited_for_is_read_from_every_transport_s_stall_message() {
        let tcp = "rank 2: timed out after 5s waiting for rank 1 (127.0.0.1:4000); 0 of 8 bytes";
        assert_eq!(waited_for(tcp), Some(1));
        let shm = "rank 0: timed out after 5s waiting for rank 13 (shared memory)";
        assert_eq!(waited_for(shm), Some(13));
        assert_eq!(waited_for("rank 2 closed the connection"), None);
        assert_eq!(waited_for("waiting for rank x"), None);
    }

    #[test]
    fn the_rank_most_waited_for_that_reported_no_wait_is_blamed() {
        // Rank 1 stopped; rank 2 timed out on it and left; rank 0 saw rank 2 leave.
        let own = "rank 0: rank 2 (127.0.0.1:5) closed the connection after 0 of 87384 bytes";
        let reports = vec![(
            2,
            "rank 2: timed out after 5s waiting for rank 1 (a)".to_string(),
        )];
        let (rank, why) = culprit(own, &reports, 3).unwrap();
        assert_eq!((rank, why.as_str()), (1, "rank 2 timed out waiting for it"));
        // A chain: 0 waits for 2, 2 waits for 3, 3 waits for nobody: 3 it is.
        let own = "rank 0: timed out after 5s waiting for rank 2 (b)";
        let reports = vec![(
            2,
            "rank 2: timed out after 5s waiting for rank 3 (c)".into(),
        )];
        assert_eq!(culprit(own, &reports, 3).unwrap().0, 3);
        assert_eq!(culprit("rank 0: disk full", &[], 3), None);
    }

    #[test]
    fn where_no_stall_names_a_peer_the_rank_that_reported_nothing_is_blamed() {
        // NCCL: rank 1 stopped; ranks 0, 2 and 3 saw no progress and cannot say on whom.
        let stall = |r| format!("rank {r}: NCCL made no progress for 5s (0 of 3 calls done)");
        let reports = vec![(2, stall(2)), (3, stall(3))];
        let (rank, why) = culprit(&stall(0), &reports, 4).unwrap();
        assert_eq!(rank, 1);
        assert_eq!(
            why,
            "rank 0, rank 2, rank 3 stalled and it reported nothing"
        );
        // A late report: both quiet ranks are said, the lowest first.
        let (rank, why) = culprit(&stall(0), &reports[1..], 4).unwrap();
        assert_eq!(
            (rank, why.as_str()),
            (
                1,
                "rank 0, rank 3 stalled and it reported nothing, nor did rank 2"
            )
        );
        // Nobody stalled (every rank failed on its own), or everybody reported: nobody blamed.
        assert_eq!(culprit("rank 0: NCCL error 3", &[], 4), None);
        let all = vec![(1, stall(1)), (2, stall(2)), (3, stall(3))];
        assert_eq!(culprit(&stall(0), &all, 4), None);
        // A named wait still wins over silence.
        let named = vec![(
            2,
            "rank 2: timed out after 5s waiting for rank 3 (x)".to_string(),
        )];
        assert_eq!(culprit(&stall(0), &named, 4).unwrap().0, 3);
    }

    #[test]
    fn reports_are_collected_until_none_arrives() {
        let got = collect(4, Duration::from_millis(200), |r| {
            (r == 2).then(|| b"rank 2: gone".to_vec())
        });
        assert_eq!(got, vec![(2, "rank 2: gone".to_string())]);
    }

    #[test]
    fn rank_0_names_the_silent_rank_from_reports_in_a_real_store() {
        let token = b"blame-test";
        let timeout = Duration::from_secs(30);
        let server = StoreServer::bind("127.0.0.1:0", token, 3, timeout).unwrap();
        let addr = server.local_addr().to_string();
        let mut two = StoreClient::connect(&addr, token, 2, timeout).unwrap();
        let _one = StoreClient::connect(&addr, token, 1, timeout).unwrap();
        let stall = "rank 2: NCCL made no progress for 5s (0 of 3 calls done)";
        report(&mut two, 2, &Error::Rank(stall.into()));
        let own = "NCCL made no progress for 5s (1 of 3 calls done)";
        let grace = Duration::from_millis(300);
        let why = explain(own, Some(&server), &[], grace, |r| {
            format!("rank {r} (host h{r})")
        });
        assert_eq!(
            why.as_deref(),
            Some("rank 1 (host h1) stopped making progress (rank 0, rank 2 stalled and it reported nothing)")
        );
    }

    #[test]
    fn a_stopped_process_on_this_machine_is_named_before_any_report() {
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        // SAFETY: signalling our own child, alive until it is reaped below.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGSTOP) };
        let places = [
            Whereabouts::mine(),
            Whereabouts {
                machine: crate::sweep::whereabouts::machine_id(),
                pid: child.id(),
            },
        ];
        let limit = Instant::now() + Duration::from_secs(30);
        while process_state(child.id()) != Some('T') && Instant::now() < limit {
            std::thread::sleep(Duration::from_millis(10));
        }
        let why = explain("x", None, &places, Duration::ZERO, |r| format!("rank {r}"));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            why.as_deref(),
            Some("rank 1 is stopped (SIGSTOP or a debugger)")
        );
        // Without a store nothing else can be asked.
        assert_eq!(
            explain("x", None, &places[..1], Duration::ZERO, |_| String::new()),
            None
        );
    }
}
