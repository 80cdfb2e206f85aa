//! The reason code of a results folder that did not complete: meta.json's `failure` (a hang or
//! a missing rank, [`crate::meta::failure`]), read from its `error` text for folders written
//! before `failure` existed.

use super::reason::Reason;
use crate::meta::failure::{of_error, Failure, FailureCause};

/// The code and the rank a failed run names, if it is a hang or a missing rank.
pub fn of_run(failure: Option<&Failure>, error: Option<&str>) -> Option<(Reason, Option<String>)> {
    let failure = failure.cloned().or_else(|| error.and_then(of_error))?;
    let code = match failure.cause {
        FailureCause::Hang => Reason::Hang,
        FailureCause::RankMissing => Reason::RankMissing,
        FailureCause::Other => return None,
    };
    Some((code, failure.named()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_failure_wins_over_the_text() {
        let recorded = Failure {
            cause: FailureCause::RankMissing,
            rank: Some(3),
            host: Some("n3".into()),
        };
        let text = "rank 1 (pid 2) made no progress";
        assert_eq!(
            of_run(Some(&recorded), Some(text)),
            Some((Reason::RankMissing, Some("rank 3 (n3)".into())))
        );
        assert_eq!(
            of_run(None, Some(text)),
            Some((Reason::Hang, Some("rank 1".into())))
        );
        assert_eq!(of_run(None, Some("disk full")), None);
        assert_eq!(of_run(None, None), None);
    }
}
