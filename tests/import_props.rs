//! Property tests of the `collbench import` readers over the real logs in tests/data/import:
//! byte flips, deleted, duplicated and inserted lines and truncation at any byte never make a
//! reader panic; a cut log yields the rows of the whole log up to the cut (or an error); no
//! reader finds more rows than the text has lines (or, for JSON, room for).

use collbench::import::log::{LogRun, Row};
use collbench::import::{nccl_json, nccl_text, osu, ParseError};
use proptest::prelude::*;
use proptest::sample::Index;

macro_rules! nccl {
    ($file:literal) => {
        (
            $file,
            include_str!(concat!("data/import/nccl-tests/", $file)),
        )
    };
}
macro_rules! osu_file {
    ($file:literal) => {
        ($file, include_str!(concat!("data/import/osu/", $file)))
    };
}

/// Logs whose tables count wrong elements (`#wrong`, `N/A`).
const WRONG_COUNT_LOGS: &[(&str, &str)] = &[
    nccl!("all_reduce_2node_2gpu_t4_tagged_ncclinfo_root.log"),
    nccl!("all_reduce_v2.18.0_tagged_stderr_versionheader.log"),
    nccl!("all_gather_v2.18.0_tagged_stderr_versionheader.log"),
    nccl!("all_reduce_v2.17.8_10node_80rank_h100.log"),
    nccl!("allreduce_sendrecv_smoke_v2.17.8_2node_h100.log"),
    nccl!("multi_coll_v2.17.8_1node_8proc_h100_allreduce_allgather_rs_alltoall_sendrecv.log"),
    nccl!("alltoall_failed_midtable_then_sendrecv_exp_time_v2.17.6_2node_8rank.log"),
    nccl!("alltoall_ok_then_sendrecv_truncated_after_header_v2.17.6_2node.log"),
    nccl!("alltoall_sendrecv_starting_line_no_version_header_2node.log"),
];

/// Logs of old releases, whose last column is a float `error`.
const ERROR_COLUMN_LOGS: &[(&str, &str)] = &[
    nccl!("all_reduce_old_noroot_g8_v100_errorfloat.log"),
    nccl!("all_gather_2019_g12_noredop_column.log"),
    nccl!("broadcast_2019_g12_root_noredop.log"),
    nccl!("reduce_2019_g12_redop_and_root.log"),
    nccl!("all_reduce_old_noroot_2node_16gpu_tagged_ncclinfo.log"),
    nccl!("multi_coll_2019_g12_dgx2_old_percoll_columns.log"),
];

const OSU_FILES: &[(&str, &str)] = &[
    osu_file!("osu_allgather_v5.6.2_default_64rank_2node_impi.txt"),
    osu_file!("osu_allreduce_v5.6.2_default_64rank_2node_impi.txt"),
    osu_file!("osu_allreduce_v7.4_default_2node_char.txt"),
    osu_file!("osu_alltoall_v5.6.2_default_64rank_2node_impi.txt"),
    osu_file!("osu_reduce_cuda_v7.3_full_192rank_excerpt.txt"),
];

const JSON: &str =
    include_str!("data/import/nccl-tests/constructed/all_reduce_v2.17.8_jsonv1_CONSTRUCTED.json");

/// Every text log, either kind.
fn nccl_log(i: Index) -> (&'static str, &'static str) {
    let n = WRONG_COUNT_LOGS.len() + ERROR_COLUMN_LOGS.len();
    let i = i.index(n);
    if i < WRONG_COUNT_LOGS.len() {
        WRONG_COUNT_LOGS[i]
    } else {
        ERROR_COLUMN_LOGS[i - WRONG_COUNT_LOGS.len()]
    }
}

/// Lines a reader could meet in a damaged or mixed-up log: fragments of every format, numbers
/// at the edges of their types, launcher prefixes.
const JUNK: &[&str] = &[
    "",
    "#",
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
    "nThread 1 nGpus 8",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong",
    "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error",
    "#       size         count    type    root     time   algbw   busbw  error",
    "#       size  count type time",
    "# size time",
    "#  Rank  0 Group  0 Pid 1 on host device  0 [0x1b] GPU",
    "#  Rank  99999999999999999999 on",
    "#  Rank",
    "#   Rank  1 on h device",
    "# Avg bus bandwidth    : 1.5",
    "# Out of bounds values : 0 OK",
    "# nccl-tests version 2.18.0 nccl-headers=22907 nccl-library=22907",
    "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=99999999999",
    "# nccl-tests version",
    "# Collective test starting: all_reduce_perf",
    "# Collective test starting:",
    "# Collective test concluded: all_reduce_perf",
    "NCCL version 2.9.9+cuda11.2",
    "NCCL version ",
    "host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to",
    "host:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL",
    "host:1:1 [0] NCCL WARN Could not find a path",
    "./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8",
    "    1048576   262144  float  sum  -1  1.6e+07  N/A  N/A  N/A  4.0  0.1  0.1  0",
    "           8             2   float       48.46    0.00    0.00  1e-07",
    "8 2 float sum -1 0 0 0 0 0 0 0 0",
    "8 2 float sum -1 N/A 0 0 0 N/A 0 0 0",
    "18446744073709551616 1 float sum -1 1 1 1 99999999999999999999 1 1 1 1",
    "18446744073709551615 18446744073709551615 float sum 9223372036854775807 1e308 1e308 1e308 18446744073709551615 1e-308 1 1 0",
    "1 1 float  -1 1 1 1 1 1 1 1 1",
    "1 1 x 1 1 nan inf -inf 1 1 1 1 1",
    "1 1 float 1 1 1 1 1 1 1 1",
    "0",
    "[1,0]<stdout>:",
    "[1,0]<stderr>:# nThread 1",
    "[1,0]<stdout>:[1,1]<stdout>:  12: 8 2 float sum -1 1 1 1 0 1 1 1 0",
    "12: ",
    "0:",
    "999999: x",
    "# OSU MPI Allreduce Latency Test v7.4",
    "# OSU MPI-CUDA  Latency Test",
    "# OSU Latency MPI Test",
    "# OSU MPI Test v",
    "# Datatype: MPI_DOUBLE.",
    "# Datatype:",
    "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations",
    "# Size",
    "# Size  Min Latency(us)",
    "1024   1e308  1e-308  5  18446744073709551616",
    "4                      3.90",
    "{\"version\":1}",
    "{\"version\":1,\"config\":{},\"results\":[{\"size\":1}]}",
    "{",
    "}",
    "\u{feff}# nThread 1",
    "\u{2028}\u{85}\u{a0}",
    "\t\r",
];

/// One change to a log.
#[derive(Clone, Debug)]
enum Mutation {
    /// XOR one byte (the text is read back lossily where that breaks UTF-8).
    Flip(Index, u8),
    DeleteLine(Index),
    DuplicateLine(Index),
    /// A line of junk before the line at the index.
    Insert(Index, String),
    /// Cut the text at a byte.
    Truncate(Index),
}

fn junk_line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(JUNK).prop_map(str::to_string),
        2 => "\\PC{0,60}",
        2 => "[0-9a-z#.:+\\-/ \\[\\]<>]{0,60}",
        1 => (prop::sample::select(JUNK), prop::sample::select(JUNK))
            .prop_map(|(a, b)| format!("{a} {b}")),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        2 => any::<Index>().prop_map(Mutation::DeleteLine),
        2 => any::<Index>().prop_map(Mutation::DuplicateLine),
        3 => (any::<Index>(), junk_line()).prop_map(|(i, s)| Mutation::Insert(i, s)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
    ]
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 1..8)
}

fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut text = text.to_string();
    for m in mutations {
        text = match m {
            Mutation::Flip(at, x) => {
                let mut bytes = text.into_bytes();
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    bytes[i] ^= x;
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Mutation::Truncate(at) => {
                let mut i = at.index(text.len() + 1);
                while !text.is_char_boundary(i) {
                    i -= 1;
                }
                text[..i].to_string()
            }
            Mutation::DeleteLine(at) | Mutation::DuplicateLine(at) | Mutation::Insert(at, _) => {
                let mut lines: Vec<String> =
                    text.split_inclusive('\n').map(str::to_string).collect();
                let i = at.index(lines.len() + 1);
                match m {
                    Mutation::DeleteLine(_) if i < lines.len() => {
                        lines.remove(i);
                    }
                    Mutation::DuplicateLine(_) if i < lines.len() => {
                        let copy = lines[i].clone();
                        lines.insert(i, copy);
                    }
                    Mutation::Insert(_, junk) => {
                        if i == lines.len() && lines.last().is_some_and(|l| !l.ends_with('\n')) {
                            lines.push(format!("\n{junk}"));
                        } else {
                            lines.insert(i, format!("{junk}\n"));
                        }
                    }
                    _ => {}
                }
                lines.concat()
            }
        };
    }
    text
}

/// What any reader's answer must respect, whatever the text: a run's lines lie inside the
/// file, its rows inside the run, one row per line at most, in file order; an error names a
/// line of the file.
fn check_text_reader(
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
fn check_json(text: &str, answer: &Result<Vec<LogRun>, ParseError>) -> Result<(), TestCaseError> {
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
fn rows_of(runs: &[LogRun]) -> Vec<&Row> {
    runs.iter().flat_map(|r| &r.rows).collect()
}

/// A log cut at byte `cut` reads as the whole log's rows up to the cut: every row whose line
/// was complete (with its newline), perhaps the row whose newline was cut off, nothing else;
/// or as an error.
fn check_cut<F>(text: &str, cut: usize, parse: F) -> Result<(), TestCaseError>
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

/// Every cut inside the last table row of each wrong-count log, and of its footer: no
/// sampling, so every byte of the place where logs are most often cut is tried.
#[test]
fn nccl_text_every_cut_in_the_last_row_of_wrong_count_logs() {
    for (name, text) in WRONG_COUNT_LOGS {
        every_cut_near_the_last_row(name, text, nccl_text::parse);
    }
}

#[test]
fn nccl_text_every_cut_in_the_last_row_of_old_logs() {
    for (name, text) in ERROR_COLUMN_LOGS {
        every_cut_near_the_last_row(name, text, nccl_text::parse);
    }
}

#[test]
fn osu_every_cut_in_the_last_row() {
    for (name, text) in OSU_FILES {
        every_cut_near_the_last_row(name, text, osu::parse);
    }
}

fn every_cut_near_the_last_row<F>(name: &str, text: &str, parse: F)
where
    F: Fn(&str) -> Result<Vec<LogRun>, ParseError> + Copy,
{
    let full = parse(text).unwrap();
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
