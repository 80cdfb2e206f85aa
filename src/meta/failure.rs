//! Why a run failed, in a form a machine can route on: meta.json's `failure`, written with
//! the `error` text when a run ends. collbench's own words for the two failures an operator
//! acts on (the launchers, the watchdogs and src/sweep/blame.rs) are read once, here: a rank
//! that stopped making progress is `hang`, a rank that died, was killed or ended early is
//! `rank-missing`, each with the rank (and its host where the message gives it). Other
//! failures (a full disk, a library error, an interrupt) have no `failure`.

use serde::{Deserialize, Serialize};

/// What failed.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum FailureCause {
    /// A rank stopped making progress (a watchdog's or a transport's timeout).
    Hang,
    /// A rank died, was killed or ended early.
    RankMissing,
    /// A cause this version does not know (written by a later one): read, never written.
    #[serde(other)]
    Other,
}

/// meta.json's `failure`: the cause and the rank it names.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub cause: FailureCause,
    /// The rank to blame; absent where the error names none (every rank exited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<usize>,
    /// Its host, where the error names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl Failure {
    /// `rank 2`, `rank 1 (h1)`; `None` without a rank.
    pub fn named(&self) -> Option<String> {
        let rank = self.rank?;
        Some(match &self.host {
            Some(h) => format!("rank {rank} ({h})"),
            None => format!("rank {rank}"),
        })
    }
}

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

/// The failure a run's error names, if it is a hang or a missing rank.
pub fn of_error(error: &str) -> Option<Failure> {
    let cause = if MISSING.iter().any(|w| error.contains(w)) {
        FailureCause::RankMissing
    } else if HANG.iter().any(|w| error.contains(w)) {
        FailureCause::Hang
    } else {
        return None;
    };
    let (rank, host) = culprit(error).unzip();
    Some(Failure {
        cause,
        rank,
        host: host.flatten(),
    })
}

/// The rank to blame: the one a message leads with when it names its host or process
/// (`rank 2 (pid 1234) ...`, `rank 1 (host h1) ...`, blame's form), else the one another rank
/// waited for (`rank 2: timed out ... waiting for rank 1`), else the first named.
fn culprit(error: &str) -> Option<(usize, Option<String>)> {
    let lead = rank_at(error, 0).filter(|(_, end)| error[*end..].starts_with(" ("));
    if let Some((r, end)) = lead {
        let host = error[end + 2..]
            .strip_prefix("host ")
            .and_then(|h| h.split(')').next())
            .filter(|h| !h.is_empty());
        return Some((r, host.map(str::to_string)));
    }
    let waited = error
        .find("waiting for rank ")
        .map(|i| i + "waiting for ".len());
    let at = waited.or_else(|| error.find("rank "))?;
    rank_at(error, at).map(|(r, _)| (r, None))
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

    fn named(e: &str) -> Option<(FailureCause, Option<String>)> {
        of_error(e).map(|f| (f.cause, f.named()))
    }

    #[test]
    fn collbench_own_failures_name_the_rank() {
        let stop = "rank 2 (pid 4242) made no progress for 2s during allreduce ring f32 sum 8 B \
                    at world 3 (process is stopped); all ranks were stopped";
        assert_eq!(
            named(stop),
            Some((FailureCause::Hang, Some("rank 2".into())))
        );
        let kill = "rank 1 (pid 77) ended with signal 9 (SIGKILL) during allgather ring f32 8 B";
        assert_eq!(
            named(kill),
            Some((FailureCause::RankMissing, Some("rank 1".into())))
        );
        let blamed = "rank 1 (host h1) stopped making progress (rank 0, rank 2 stalled and it \
                      reported nothing)";
        assert_eq!(
            named(blamed),
            Some((FailureCause::Hang, Some("rank 1 (h1)".into())))
        );
        let died = "rank 3 (host n3) died (closed its connections without a goodbye)";
        assert_eq!(
            named(died),
            Some((FailureCause::RankMissing, Some("rank 3 (n3)".into())))
        );
        let waited = "rank 2: timed out after 5s waiting for rank 1 (127.0.0.1:4000); 0 of 8 bytes";
        assert_eq!(
            named(waited),
            Some((FailureCause::Hang, Some("rank 1".into())))
        );
        let all = "every rank exited before finishing allreduce ring f32 sum 8 B at world 2";
        assert_eq!(named(all), Some((FailureCause::RankMissing, None)));
    }

    #[test]
    fn a_cause_written_by_a_later_version_reads_as_other() {
        let f: Failure =
            serde_json::from_str(r#"{"cause":"gpu-fell-off-the-bus","rank":3}"#).expect("reads");
        assert_eq!((f.cause, f.rank), (FailureCause::Other, Some(3)));
        let known: Failure = serde_json::from_str(r#"{"cause":"rank-missing"}"#).expect("reads");
        assert_eq!(
            (known.cause, known.named()),
            (FailureCause::RankMissing, None)
        );
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
            Some((FailureCause::Hang, None))
        );
        assert_eq!(
            named("rank  (host ) died"),
            Some((FailureCause::RankMissing, None))
        );
        let huge = "rank 99999999999999999999999 (pid 1) made no progress";
        assert_eq!(named(huge), Some((FailureCause::Hang, None)));
    }
}
