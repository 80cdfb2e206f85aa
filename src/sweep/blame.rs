//! Who to blame when a multi-host run fails: the rank that stopped making progress, not the
//! first neighbour that noticed. A rank that gives up (its transport timed out waiting for a
//! peer, or any other error) reports why through rank 0's store before it exits; rank 0 then
//! counts, over those reports and its own error, which rank each was waiting for, and names the
//! rank most waited for that did not report a wait of its own (a stopped or hung process cannot
//! report). As the local launcher's watchdog does with its shared counters.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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

/// The rank to blame from rank 0's own error and the others' reports (rank, message), with the
/// evidence; `None` when no rank was waited for.
pub fn culprit(own: &str, reports: &[(usize, String)]) -> Option<(usize, String)> {
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
    const NAMED: usize = 4;
    let mut names: Vec<String> = by.iter().take(NAMED).map(|r| format!("rank {r}")).collect();
    if by.len() > NAMED {
        names.push(format!("{} more", by.len() - NAMED));
    }
    Some((
        rank,
        format!("{} timed out waiting for it", names.join(", ")),
    ))
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
        let (rank, why) = culprit(own, &reports).unwrap();
        assert_eq!((rank, why.as_str()), (1, "rank 2 timed out waiting for it"));
        // A chain: 0 waits for 2, 2 waits for 3, 3 waits for nobody: 3 it is.
        let own = "rank 0: timed out after 5s waiting for rank 2 (b)";
        let reports = vec![(
            2,
            "rank 2: timed out after 5s waiting for rank 3 (c)".into(),
        )];
        assert_eq!(culprit(own, &reports).unwrap().0, 3);
        assert_eq!(culprit("rank 0: disk full", &[]), None);
    }

    #[test]
    fn reports_are_collected_until_none_arrives() {
        let got = collect(4, Duration::from_millis(200), |r| {
            (r == 2).then(|| b"rank 2: gone".to_vec())
        });
        assert_eq!(got, vec![(2, "rank 2: gone".to_string())]);
    }
}
