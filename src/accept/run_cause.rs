//! Why a results folder did not complete, from its meta.json `error` in collbench's own words
//! (the launchers, the watchdogs and src/sweep/blame.rs): a rank that stopped making progress is
//! `hang`, a rank that died, was killed or ended early is `rank-missing`, each naming the rank
//! (with its host where the message gives it). Other failures (a full disk, a library error, an
//! interrupt) have no such code.

use super::reason::Reason;

/// Words of a stall: the watchdogs' and the transports' timeouts.
const HANG: [&str; 5] = [
    "made no progress",
    "stopped making progress",
    "stalled",
    "timed out",
    "never published",
];

/// Words of a rank that is gone.
const MISSING: [&str; 5] = [
    "died",
    "ended with signal",
    "ended with exit",
    "exited before",
    "closed its connections",
];

/// The code and the rank a failed run's error names, if it is a hang or a missing rank.
pub fn of_run_error(error: &str) -> Option<(Reason, Option<String>)> {
    let code = if MISSING.iter().any(|w| error.contains(w)) {
        Reason::RankMissing
    } else if HANG.iter().any(|w| error.contains(w)) {
        Reason::Hang
    } else {
        return None;
    };
    Some((code, culprit(error)))
}

/// The rank to blame: the one a message leads with when it names its host or process
/// (`rank 2 (pid 1234) ...`, `rank 1 (host h1) ...`, blame's form), else the one another rank
/// waited for (`rank 2: timed out ... waiting for rank 1`), else the first named.
fn culprit(error: &str) -> Option<String> {
    let lead = rank_at(error, 0).filter(|(_, end)| error[*end..].starts_with(" ("));
    if let Some((r, end)) = lead {
        let host = error[end + 2..]
            .strip_prefix("host ")
            .and_then(|h| h.split(')').next());
        return Some(match host {
            Some(h) => format!("rank {r} ({h})"),
            None => format!("rank {r}"),
        });
    }
    let waited = error
        .find("waiting for rank ")
        .map(|i| i + "waiting for ".len());
    let at = waited.or_else(|| error.find("rank "))?;
    rank_at(error, at).map(|(r, _)| format!("rank {r}"))
}

/// `rank N` at byte `at`: N and the byte after it.
fn rank_at(text: &str, at: usize) -> Option<(usize, usize)> {
    let rest = text.get(at..)?.strip_prefix("rank ")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let n = rest[..digits].parse().ok()?;
    Some((n, at + "rank ".len() + digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(e: &str) -> Option<(Reason, Option<String>)> {
        of_run_error(e)
    }

    #[test]
    fn collbench_own_failures_name_the_rank() {
        let stop = "rank 2 (pid 4242) made no progress for 2s during allreduce ring f32 sum 8 B \
                    at world 3 (process is stopped); all ranks were stopped";
        assert_eq!(named(stop), Some((Reason::Hang, Some("rank 2".into()))));
        let kill = "rank 1 (pid 77) ended with signal 9 (SIGKILL) during allgather ring f32 8 B";
        assert_eq!(
            named(kill),
            Some((Reason::RankMissing, Some("rank 1".into())))
        );
        let blamed = "rank 1 (host h1) stopped making progress (rank 0, rank 2 stalled and it \
                      reported nothing)";
        assert_eq!(
            named(blamed),
            Some((Reason::Hang, Some("rank 1 (h1)".into())))
        );
        let died = "rank 3 (host n3) died (closed its connections without a goodbye)";
        assert_eq!(
            named(died),
            Some((Reason::RankMissing, Some("rank 3 (n3)".into())))
        );
        let waited = "rank 2: timed out after 5s waiting for rank 1 (127.0.0.1:4000); 0 of 8 bytes";
        assert_eq!(named(waited), Some((Reason::Hang, Some("rank 1".into()))));
        let all = "every rank exited before finishing allreduce ring f32 sum 8 B at world 2";
        assert_eq!(named(all), Some((Reason::RankMissing, None)));
    }

    #[test]
    fn other_failures_have_no_such_code() {
        for e in [
            "interrupted by a signal (Ctrl-C or SIGTERM from the launcher)",
            "results/x/summary.csv: No space left on device",
            "rank 0: ncclAllReduce failed: ncclInvalidArgument",
            "",
        ] {
            assert_eq!(named(e), None, "{e}");
        }
        // Near-valid rank references name nobody rather than a wrong rank.
        assert_eq!(
            named("rank x (pid 1) made no progress"),
            Some((Reason::Hang, None))
        );
        assert_eq!(
            named("rank  (host ) died"),
            Some((Reason::RankMissing, None))
        );
        let huge = "rank 99999999999999999999999 (pid 1) made no progress";
        assert_eq!(named(huge), Some((Reason::Hang, None)));
    }
}
