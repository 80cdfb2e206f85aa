//! What a reader's answer must respect, whatever the text, and what a cut log must read as.

use collbench::import::log::{LogRun, Row};
use collbench::import::ParseError;
use proptest::prelude::*;

/// What any reader's answer must respect, whatever the text: a run's lines lie inside the
/// file, its rows inside the run, one row per line at most, in file order; an error names a
/// line of the file.
pub(crate) fn check_text_reader(
    text: &str,
    answer: &Result<Vec<LogRun>, ParseError>,
) -> Result<(), TestCaseError> {
    let lines = text.lines().count();
    match answer {
        Ok(runs) => {
            prop_assert!(!runs.is_empty());
            let mut prev = 0;
            let mut total = 0;
            for run in runs {
                prop_assert!(run.first_line >= 1, "first_line {}", run.first_line);
                prop_assert!(
                    run.first_line <= run.last_line && run.last_line <= lines,
                    "lines {}..{} of {lines}",
                    run.first_line,
                    run.last_line
                );
                for r in &run.rows {
                    prop_assert!(r.line > prev, "row line {} after {prev}", r.line);
                    prop_assert!(
                        run.first_line <= r.line && r.line <= run.last_line,
                        "row line {} outside its run {}..{}",
                        r.line,
                        run.first_line,
                        run.last_line
                    );
                    prev = r.line;
                }
                total += run.rows.len();
            }
            prop_assert!(total <= lines, "{total} rows in {lines} lines");
        }
        Err(e) => {
            prop_assert!(
                e.line >= 1 && e.line <= lines.max(1),
                "error at line {} of {lines}: {}",
                e.line,
                e.msg
            );
            prop_assert!(!e.msg.is_empty());
        }
    }
    Ok(())
}

/// JSON: an error names a line of the file; every row and rank needs at least
/// `{"size":0}` / `{"rank":0}` (10 bytes) of the text.
pub(crate) fn check_json(
    text: &str,
    answer: &Result<Vec<LogRun>, ParseError>,
) -> Result<(), TestCaseError> {
    let lines = text.matches('\n').count() + 1;
    match answer {
        Ok(runs) => {
            prop_assert!(!runs.is_empty());
            let rows: usize = runs.iter().map(|r| r.rows.len()).sum();
            let ranks: usize = runs.iter().map(|r| r.ranks.len()).sum();
            prop_assert!(
                (rows + ranks) * 10 <= text.len(),
                "{rows} rows, {ranks} ranks"
            );
            for run in runs {
                prop_assert!(run.first_line >= 1 && run.first_line <= lines);
                for r in &run.rows {
                    let h = [&r.out_of_place, &r.in_place];
                    for h in h.into_iter().flatten() {
                        prop_assert!(h.time_us > 0.0 && h.time_us.is_finite());
                    }
                }
            }
        }
        Err(e) => prop_assert!(e.line >= 1 && e.line <= lines, "{e:?} of {lines}"),
    }
    Ok(())
}

/// All rows of all runs, in file order.
pub(crate) fn rows_of(runs: &[LogRun]) -> Vec<&Row> {
    runs.iter().flat_map(|r| &r.rows).collect()
}

/// A log cut at byte `cut` reads as the whole log's rows up to the cut: every row whose line
/// was complete (with its newline), perhaps the row whose newline was cut off, nothing else;
/// or as an error.
pub(crate) fn check_cut<F>(text: &str, cut: usize, parse: F) -> Result<(), TestCaseError>
where
    F: Fn(&str) -> Result<Vec<LogRun>, ParseError>,
{
    let full = parse(text).expect("the whole log parses");
    let full_rows = rows_of(&full);
    let part = &text[..cut];
    let Ok(runs) = parse(part) else {
        return Ok(());
    };
    let rows = rows_of(&runs);
    prop_assert!(
        rows.len() <= full_rows.len() && rows[..] == full_rows[..rows.len()],
        "cut at byte {cut} (`...{}`): {} rows, the last {:?}",
        &part[part.len().saturating_sub(40)..],
        rows.len(),
        rows.last()
    );
    // Rows whose line ends (with its newline) before the cut are all there.
    let line_ends: Vec<usize> = text
        .split_inclusive('\n')
        .scan(0, |end, l| {
            *end += l.len();
            Some(*end)
        })
        .collect();
    let complete = full_rows
        .iter()
        .filter(|r| line_ends[r.line - 1] <= cut)
        .count();
    prop_assert!(
        rows.len() == complete || rows.len() == complete + 1,
        "cut at byte {cut}: {} rows where {complete} were complete",
        rows.len()
    );
    Ok(())
}

/// Every cut inside the last table row of each of `files`, and of its footer: no sampling, so
/// every byte of the place where logs are most often cut is tried. A failure names the file.
pub(crate) fn every_cut_near_the_last_row<F>(files: &[(&str, &str)], parse: F)
where
    F: Fn(&str) -> Result<Vec<LogRun>, ParseError> + Copy,
{
    for (name, text) in files {
        let full = parse(text).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let last = rows_of(&full).last().expect("a row").line;
        let start: usize = text
            .split_inclusive('\n')
            .take(last - 1)
            .map(str::len)
            .sum();
        let end = (start + 400).min(text.len());
        for cut in start..=end {
            if let Err(e) = check_cut(text, cut, parse) {
                panic!("{name}: {e}");
            }
        }
    }
}
