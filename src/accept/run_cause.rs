//! The reason code of a results folder that did not complete: its failure (a hang or a missing
//! rank, [`crate::meta::failure`]; [`super::measure`] reads it from meta.json, or from the
//! `error` text of folders written before `failure` existed).

use super::reason::Reason;
use crate::meta::failure::{Failure, FailureCause};

/// The code and the rank a failed run names, if it is a hang or a missing rank.
pub fn of_run(failure: Option<&Failure>) -> Option<(Reason, Option<String>)> {
    let failure = failure?;
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
    fn a_failure_gives_its_code_and_names_its_rank() {
        let recorded = Failure {
            cause: FailureCause::RankMissing,
            rank: Some(3),
            host: Some("n3".into()),
        };
        assert_eq!(
            of_run(Some(&recorded)),
            Some((Reason::RankMissing, Some("rank 3 (n3)".into())))
        );
        let later = Failure {
            cause: FailureCause::Other,
            ..recorded
        };
        assert_eq!(of_run(Some(&later)), None);
        assert_eq!(of_run(None), None);
    }
}
