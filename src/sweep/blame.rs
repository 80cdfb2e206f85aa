//! Who to blame when a multi-host run fails: the rank that stopped making progress, not the
//! first neighbour that noticed. A rank that gives up (its transport timed out waiting for a
//! peer, or any other error) reports why through rank 0's store before it exits; rank 0 then
//! counts, over those reports and its own error, which rank each was waiting for, and names the
//! rank most waited for that did not report a wait of its own (a stopped or hung process cannot
//! report). As the local launcher's watchdog does with its shared counters.

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
    let mut waits: Vec<(usize, usize)> = Vec::new();
    waits.extend(waited_for(own).map(|p| (0, p)));
    for (r, m) in reports {
        waits.extend(waited_for(m).map(|p| (*r, p)));
    }
    let waiting: Vec<usize> = waits.iter().map(|w| w.0).collect();
    let mut counts: Vec<(usize, Vec<usize>)> = Vec::new();
    for &(who, peer) in &waits {
        match counts.iter_mut().find(|c| c.0 == peer) {
            Some(c) => c.1.push(who),
            None => counts.push((peer, vec![who])),
        }
    }
    // A rank that itself reported a wait is a victim, not the cause.
    counts.retain(|c| !waiting.contains(&c.0));
    counts.sort_by_key(|c| std::cmp::Reverse(c.1.len()));
    let (rank, by) = counts.into_iter().next()?;
    let by: Vec<String> = by.iter().map(|r| format!("rank {r}")).collect();
    Some((rank, format!("{} timed out waiting for it", by.join(", "))))
}

/// Polls `read` for the reports of ranks `1..world` for up to `grace`, returning those present
/// once no new one arrived for a tenth of it.
pub fn collect(
    world: usize,
    grace: Duration,
    read: impl Fn(usize) -> Option<Vec<u8>>,
) -> Vec<(usize, String)> {
    let start = Instant::now();
    let mut last_change = Instant::now();
    let mut got: Vec<(usize, String)> = Vec::new();
    while start.elapsed() < grace && last_change.elapsed() < grace / 10 + Duration::from_millis(20)
    {
        for r in 1..world {
            if got.iter().any(|g| g.0 == r) {
                continue;
            }
            if let Some(v) = read(r) {
                let text = String::from_utf8_lossy(&v[..v.len().min(MAX_REPORT)]).into_owned();
                got.push((r, text));
                last_change = Instant::now();
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    got.sort_by_key(|g| g.0);
    got
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
