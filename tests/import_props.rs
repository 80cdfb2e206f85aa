//! Property tests of the `collbench import` readers over the real logs in tests/data/import:
//! byte flips, deleted, duplicated and inserted lines and truncation at any byte never make a
//! reader panic; a cut log yields the rows of the whole log up to the cut (or an error); no
//! reader finds more rows than the text has lines (or, for JSON, room for).

#[path = "import_props/checks.rs"]
mod checks;
#[path = "import_props/inputs.rs"]
mod inputs;
#[path = "import_props/mutations.rs"]
mod mutations;

use checks::{check_cut, check_json, check_text_reader, every_cut_near_the_last_row};
use collbench::import::{nccl_json, nccl_text, osu};
use inputs::{nccl_log, ERROR_COLUMN_LOGS, JSON, OSU_FILES, WRONG_COUNT_LOGS};
use mutations::{apply, junk_line, mutation, mutations, Mutation};
use proptest::prelude::*;
use proptest::sample::Index;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn nccl_text_mutated_logs_never_panic(log in any::<Index>(), m in mutations()) {
        let (_, text) = nccl_log(log);
        let text = apply(text, &m);
        let answer = nccl_text::parse(&text);
        check_text_reader(&text, &answer)?;
    }

    #[test]
    fn nccl_text_junk_lines_never_panic(log in any::<Index>(),
                                        junk in prop::collection::vec((any::<Index>(), junk_line()), 1..12)) {
        let (_, text) = nccl_log(log);
        let m: Vec<Mutation> = junk.into_iter().map(|(i, s)| Mutation::Insert(i, s)).collect();
        let text = apply(text, &m);
        let answer = nccl_text::parse(&text);
        check_text_reader(&text, &answer)?;
    }

    #[test]
    fn nccl_text_truncated_at_any_byte_never_panics(log in any::<Index>(), cut in any::<Index>()) {
        let (_, text) = nccl_log(log);
        let part = &text[..cut.index(text.len() + 1)];
        let answer = nccl_text::parse(part);
        check_text_reader(part, &answer)?;
    }

    #[test]
    fn nccl_text_cut_logs_read_as_a_prefix_of_their_rows(log in any::<Index>(), cut in any::<Index>()) {
        let (_, text) = WRONG_COUNT_LOGS[log.index(WRONG_COUNT_LOGS.len())];
        check_cut(text, cut.index(text.len() + 1), nccl_text::parse)?;
    }

    #[test]
    fn nccl_text_of_random_log_lines_never_panics(lines in prop::collection::vec(junk_line(), 0..40)) {
        let text = lines.join("\n");
        let answer = nccl_text::parse(&text);
        check_text_reader(&text, &answer)?;
    }

    #[test]
    fn osu_mutated_files_never_panic(file in any::<Index>(), m in mutations()) {
        let (_, text) = OSU_FILES[file.index(OSU_FILES.len())];
        let text = apply(text, &m);
        let answer = osu::parse(&text);
        check_text_reader(&text, &answer)?;
        if let Ok(runs) = &answer {
            for run in runs {
                let _ = osu::op_of(run, None);
            }
        }
    }

    #[test]
    fn osu_of_random_log_lines_never_panics(lines in prop::collection::vec(junk_line(), 0..40)) {
        let text = lines.join("\n");
        let answer = osu::parse(&text);
        check_text_reader(&text, &answer)?;
    }

    #[test]
    fn osu_truncated_at_any_byte_never_panics(file in any::<Index>(), cut in any::<Index>()) {
        let (_, text) = OSU_FILES[file.index(OSU_FILES.len())];
        let part = &text[..cut.index(text.len() + 1)];
        let answer = osu::parse(part);
        check_text_reader(part, &answer)?;
    }

    #[test]
    fn nccl_json_mutated_never_panics(m in mutations()) {
        let text = apply(JSON, &m);
        let answer = nccl_json::parse(&text);
        check_json(&text, &answer)?;
    }

    #[test]
    fn nccl_json_truncated_at_any_byte_is_an_error(cut in 0..JSON.len()) {
        let part = &JSON[..cut];
        let answer = nccl_json::parse(part);
        check_json(part, &answer)?;
        prop_assert!(answer.is_err(), "cut at {cut} read");
    }

    #[test]
    fn nccl_json_concatenated_and_mixed_never_panics(copies in 1usize..4,
                                                     sep in prop::sample::select(vec!["", "\n", " ", "\n\n", "x", "{}"]),
                                                     m in prop::collection::vec(mutation(), 0..4)) {
        let text = apply(&vec![JSON; copies].join(sep), &m);
        let answer = nccl_json::parse(&text);
        check_json(&text, &answer)?;
        if m.is_empty() && (sep.trim().is_empty()) {
            let runs = answer.unwrap();
            prop_assert_eq!(runs.len(), copies);
            prop_assert!(runs.iter().all(|r| r.rows.len() == 5 && r.ranks.len() == 2));
        }
    }

    #[test]
    fn every_reader_survives_every_other_format(which in 0usize..3, file in any::<Index>(), m in prop::collection::vec(mutation(), 0..3)) {
        let all: Vec<&str> = WRONG_COUNT_LOGS.iter().chain(ERROR_COLUMN_LOGS).chain(OSU_FILES)
            .map(|(_, t)| *t).chain([JSON]).collect();
        let text = apply(all[file.index(all.len())], &m);
        match which {
            0 => check_text_reader(&text, &nccl_text::parse(&text))?,
            1 => check_text_reader(&text, &osu::parse(&text))?,
            _ => check_json(&text, &nccl_json::parse(&text))?,
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn nccl_text_cut_old_logs_read_as_a_prefix_of_their_rows(log in any::<Index>(), cut in any::<Index>()) {
        let (_, text) = ERROR_COLUMN_LOGS[log.index(ERROR_COLUMN_LOGS.len())];
        check_cut(text, cut.index(text.len() + 1), nccl_text::parse)?;
    }

    #[test]
    fn osu_cut_files_read_as_a_prefix_of_their_rows(file in any::<Index>(), cut in any::<Index>()) {
        let (_, text) = OSU_FILES[file.index(OSU_FILES.len())];
        check_cut(text, cut.index(text.len() + 1), osu::parse)?;
    }
}

/// Every cut inside the last table row of each wrong-count log, and of its footer.
#[test]
fn nccl_text_every_cut_in_the_last_row_of_wrong_count_logs() {
    every_cut_near_the_last_row(WRONG_COUNT_LOGS, nccl_text::parse);
}

#[test]
fn nccl_text_every_cut_in_the_last_row_of_old_logs() {
    every_cut_near_the_last_row(ERROR_COLUMN_LOGS, nccl_text::parse);
}

#[test]
fn osu_every_cut_in_the_last_row() {
    every_cut_near_the_last_row(OSU_FILES, osu::parse);
}
