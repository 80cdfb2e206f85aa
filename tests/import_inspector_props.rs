//! Property tests of the NCCL Inspector reader over the files of tests/data/import/nccl-inspector:
//! flipped bytes, deleted, duplicated and inserted lines, numbers swapped for near-valid ones and
//! truncation at any byte never make it panic; an error names a line of the text; what it reads
//! never holds more objects than the text has lines, and groups without panicking.

#[path = "import_props/inputs.rs"]
#[allow(dead_code)]
mod inputs;
#[path = "import_props/mutations.rs"]
mod mutations;

use collbench::import::inspector::{group, parse};
use mutations::{apply, mutations};
use proptest::prelude::*;
use proptest::sample::Index;

const FILE: &str = include_str!("data/import/nccl-inspector/job-2rank/gpu-node-07-pid41001.log");

/// Numbers and values one step from valid: what a hand-edited or corrupted dump holds.
const NEAR: [&str; 12] = [
    "-1",
    "0",
    "1e400",
    "18446744073709551616",
    "2.5",
    "null",
    "\"\"",
    "true",
    "[]",
    "{}",
    "\"nan\"",
    "4294967296",
];

fn checked(text: &str) -> Result<(), TestCaseError> {
    let lines = text.lines().count();
    match parse(text) {
        Ok(f) => {
            prop_assert!(f.colls.len() + f.p2p <= lines);
            let _ = group(&f.colls);
        }
        Err(e) => prop_assert!(e.line >= 1 && e.line <= lines, "line {} of {lines}", e.line),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_dumps_never_panic(m in mutations()) {
        checked(&apply(FILE, &m))?;
    }

    #[test]
    fn a_value_swapped_for_a_near_valid_one_is_read_or_refused(field in any::<Index>(), near in prop::sample::select(&NEAR[..])) {
        // Every `"key":value` of the file is a place to put a near-valid value.
        let spots: Vec<usize> = FILE.match_indices("\":").map(|(i, _)| i + 2).collect();
        let at = spots[field.index(spots.len())];
        let end = FILE[at..].find([',', '}']).map_or(FILE.len(), |e| at + e);
        let text = format!("{}{near}{}", &FILE[..at], &FILE[end..]);
        checked(&text)?;
    }

    #[test]
    fn truncated_at_any_byte_never_panics(cut in any::<Index>()) {
        let part = &FILE[..cut.index(FILE.len() + 1)];
        checked(part)?;
    }
}
