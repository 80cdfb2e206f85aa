//! Logs that failed, were cut or lack their headers, logs cut here at every place that matters,
//! and text the reader refuses, with the line it names.

use super::*;

/// Two nodes of 4 H100 ranks each, nccl-tests 2.17.6.
const FAILED_PAIR: Setup = Setup {
    version: Some("2.17.6"),
    library: Some("NCCL 2.28.7"),
    ranks: 8,
    hosts: &["cnode2-001", "cnode2-003"],
    gpu0: Some(H100),
};

const CUT_PAIR: Setup = Setup {
    ranks: 2,
    hosts: &["cnode2-002", "cnode2-008"],
    ..FAILED_PAIR
};

/// No version header, no NCCL version line.
const NO_VERSION_PAIR: Setup = Setup {
    version: None,
    library: None,
    ranks: 2,
    hosts: &["cnode4-005", "cnode4-006"],
    gpu0: Some(H100),
};

#[rustfmt::skip]
const RUNS: &[Expected] = &[
    // The run after the failed one (which `failed_table_then_exponent_times` checks).
    Expected {
        log: FAILED_MIDTABLE, run: (1, 2), test: Some("sendrecv_perf"), setup: FAILED_PAIR,
        lines: (27, 53), truncated: false, foreign: 0, rows: 10, kind: ("double", "sum", Some(-1)),
        edges: Some((
            (42, 33554432, Some(4194304), ok(3809.85, 8.81, 8.81), na(3875.27, 8.66, 8.66)),
            (51, 17179869184, Some(2147483648), ok(1.6e7, 1.09, 1.09), na(1.7e7, 1.03, 1.03)),
        )),
    },
    Expected {
        log: CUT_AFTER_HEADER, run: (0, 2), test: Some("alltoall_perf"), setup: CUT_PAIR,
        lines: (3, 23), truncated: false, foreign: 0, rows: 10, kind: ("double", "none", Some(-1)),
        edges: Some((
            (12, 33554432, Some(2097152), ok(1299.79, 25.82, 12.91), na(1280.15, 26.21, 13.11)),
            (21, 17179869184, Some(1073741824),
             ok(638886.0, 26.89, 13.45), na(635731.0, 27.02, 13.51)),
        )),
    },
    // The file ends right after this run's column header.
    Expected {
        log: CUT_AFTER_HEADER, run: (1, 2), test: Some("sendrecv_perf"), setup: CUT_PAIR,
        lines: (29, 37), truncated: true, foreign: 0, rows: 0, kind: ("double", "sum", Some(-1)),
        edges: None,
    },
    Expected {
        log: NO_VERSION, run: (0, 2), test: Some("alltoall_perf"), setup: NO_VERSION_PAIR,
        lines: (2, 22), truncated: false, foreign: 0, rows: 10, kind: ("double", "none", Some(-1)),
        edges: Some((
            (11, 33554432, Some(2097152), ok(856.0, 39.20, 19.60), na(842.7, 39.82, 19.91)),
            (20, 17179869184, Some(1073741824),
             ok(316077.0, 54.35, 27.18), na(315105.0, 54.52, 27.26)),
        )),
    },
    Expected {
        log: NO_VERSION, run: (1, 2), test: Some("sendrecv_perf"), setup: NO_VERSION_PAIR,
        lines: (27, 47), truncated: false, foreign: 0, rows: 10, kind: ("double", "sum", Some(-1)),
        edges: Some((
            (36, 33554432, Some(4194304), ok(1492.4, 22.48, 22.48), na(1490.7, 22.51, 22.51)),
            (45, 17179869184, Some(2147483648),
             ok(629698.0, 27.28, 27.28), na(629508.0, 27.29, 27.29)),
        )),
    },
];

#[test]
fn every_run_of_the_failed_cut_and_headerless_logs_reads_as_printed() {
    check_runs(RUNS);
}

#[test]
fn failed_table_then_exponent_times() {
    let runs = parse_ok(FAILED_MIDTABLE.text);
    assert_eq!(runs.len(), 2);
    let failed = facts(&runs[0]);
    assert_eq!(
        (
            failed.test,
            failed.version,
            failed.library,
            failed.ranks,
            failed.hosts.clone(),
            failed.gpu0,
            failed.lines.0,
            failed.truncated,
            failed.rows,
        ),
        (
            Some("alltoall_perf"),
            Some("2.17.6"),
            Some("NCCL 2.28.7"),
            8,
            FAILED_PAIR.hosts.to_vec(),
            Some(H100),
            3,
            true,
            0,
        )
    );
    // Lines 18-24: `Test NCCL failure` and ` .. pid: Test failure` lines.
    assert_eq!(failed.foreign, 7);
    // `1.6e+07` stands for anything within 0.05e7 of it.
    assert_eq!(out_of_place(&runs[1], 9).time_step_us, 1e6);
    // `%7s` fallbacks: 7 digits without decimals.
    assert_eq!(out_of_place(&runs[1], 7).time_us, 1571853.0);
}

#[test]
fn failed_table_ends_at_its_own_last_line() {
    let runs = parse_ok(FAILED_MIDTABLE.text);
    // Line 25 (`# nccl-tests version`) and 26 (`# Collective test starting: sendrecv_perf`)
    // belong to the next run.
    let last = runs[0].last_line;
    assert!((17..=24).contains(&last), "last_line {last}");
}

#[test]
fn file_that_ends_right_after_a_column_header() {
    let runs = parse_ok(CUT_AFTER_HEADER.text);
    let ends: Vec<(bool, usize)> = runs.iter().map(|r| (r.truncated, r.rows.len())).collect();
    assert_eq!(ends, [(false, 10), (true, 0)]);
}

#[test]
fn collective_test_starting_without_version_header() {
    let runs = parse_ok(NO_VERSION.text);
    assert!(runs.iter().all(|r| r.tool_version.is_none()));
    // The pre-getFloatStr `%7.1f` keeps a trailing zero: `856.0` is to 0.1 us.
    assert_eq!(out_of_place(&runs[0], 0).time_step_us, 0.1);
}

/// `text` up to and including the first `keep_of_line` bytes of its line `line` (1-based).
fn cut_inside_line(text: &str, line: usize, keep_of_line: usize) -> &str {
    let start: usize = text
        .split_inclusive('\n')
        .take(line - 1)
        .map(str::len)
        .sum();
    &text[..start + keep_of_line]
}

#[test]
fn log_cut_in_the_middle_of_its_last_row_keeps_the_rows_before() {
    let text = AR_218.text;
    let full = parse_ok(text);
    // Line 27 is the last row (`[1,0]<stdout>:   134217728 ... 58479.5 ...`).
    let line27 = text.lines().nth(26).unwrap();
    assert!(line27.contains("58479.5"), "{line27}");
    let at = line27.find("58479.5").unwrap();
    for keep in [
        at + 3,
        at + 7,
        line27.find("58055").unwrap() + 2,
        line27.len() - 8,
    ] {
        let text = cut_inside_line(text, 27, keep);
        assert!(!text.ends_with('\n'));
        let runs = parse_ok(text);
        assert_eq!(runs.len(), 1, "cut at {keep}");
        let run = &runs[0];
        assert_eq!(run.rows.len(), 7, "cut at {keep}");
        assert_eq!(run.rows[..], full[0].rows[..7]);
        assert!(run.truncated, "cut at {keep}");
        assert_eq!((run.first_line, run.last_line), (11, 26), "cut at {keep}");
        assert_eq!(run.test.as_deref(), Some("all_reduce_perf_mpi"));
        assert_eq!(run.ranks.len(), 2);
    }
    // Cut right after the last row: all rows, no footer.
    let runs = parse_ok(cut_inside_line(text, 28, 0));
    assert_eq!(runs[0].rows, full[0].rows);
    assert!(runs[0].truncated);
    assert_eq!(runs[0].last_line, 27);
}

#[test]
fn log_cut_in_the_middle_of_a_row_of_the_second_run() {
    let text = SMOKE.text;
    let full = parse_ok(text);
    // Line 36 is the third row of the sendrecv run.
    let line = text.lines().nth(35).unwrap();
    assert!(line.contains("3108.44"), "{line}");
    let runs = parse_ok(cut_inside_line(text, 36, line.find("3108.44").unwrap()));
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0], full[0]);
    assert_eq!(runs[1].rows[..], full[1].rows[..2]);
    assert!(runs[1].truncated);
    assert_eq!(runs[1].last_line, 35);
}

#[test]
fn log_cut_inside_the_last_field_of_its_last_row() {
    let full = parse_ok(OLD_V100.text);
    // Line 40, the last row, ends in the in-place error `2e-07`.
    let line = OLD_V100.text.lines().nth(39).unwrap();
    assert!(line.ends_with("2e-07"), "{line}");
    for keep in [line.len() - 4, line.len() - 1] {
        let text = cut_inside_line(OLD_V100.text, 40, keep);
        match parse(text) {
            Ok(runs) => {
                let tail = &text[text.len() - 30..];
                assert!(
                    runs[0].rows[..] == full[0].rows[..24],
                    "cut to `...{tail}`: {} rows, the last read as {:?}",
                    runs[0].rows.len(),
                    runs[0].rows.last().map(|r| &r.in_place)
                );
                assert!(runs[0].truncated);
            }
            Err(e) => assert_eq!(e.line, 40),
        }
    }
}

#[test]
fn text_that_is_no_log_is_refused_at_line_1() {
    let e = parse("hello\nworld\n").unwrap_err();
    assert_eq!(e.line, 1, "{e:?}");
    assert!(e.msg.contains("not a nccl-tests log"), "{}", e.msg);
    let e = parse("").unwrap_err();
    assert_eq!(e.line, 1);
    let e = parse("\n\n   \n").unwrap_err();
    assert_eq!(e.line, 1);
    // Header lines without a table or rank list are no log either.
    let e = parse("# nThread 1 nGpus 1 minBytes 8 maxBytes 8\n#\n").unwrap_err();
    assert!(e.msg.contains("not a nccl-tests log"), "{}", e.msg);
    // An OSU file.
    let osu =
        include_str!("../../../tests/data/import/osu/osu_allreduce_v7.4_default_2node_char.txt");
    assert!(parse(osu).is_err());
}

/// A damage done to a log: (log, text replaced, its replacement, the line the error names, what
/// its message quotes).
type Damage = (Log, &'static str, &'static str, usize, Option<&'static str>);

/// Each damaged log is refused, at the line of the damage.
fn check_refused(damages: &[Damage]) {
    for &(log, from, to, line, quoted) in damages {
        let file = log.file;
        assert!(log.text.contains(from), "{file}: no `{from}`");
        let e = match parse(&log.text.replacen(from, to, 1)) {
            Ok(_) => panic!("{file}: read with `{from}` replaced by `{to}`"),
            Err(e) => e,
        };
        assert_eq!(e.line, line, "{file}, `{to}`: {e:?}");
        if let Some(quoted) = quoted {
            assert!(e.msg.contains(quoted), "{file}, `{to}`: {}", e.msg);
        }
    }
}

#[rustfmt::skip]
#[test]
fn row_that_does_not_parse_in_the_middle_of_a_table_names_its_line() {
    check_refused(&[
        // Line 14 of the smoke log is `134217728 16777216 double sum -1 3014.94 ...`.
        (SMOKE, "3014.94", "3O14.94", 14, Some("3O14.94")),
        // A field missing from a row that is not the last one.
        (SMOKE, "   44.52   44.52       0", "   44.52       0", 14, Some("12 fields")),
        // A negative time in a tagged, NCCL INFO interleaved log.
        (T4, "   583.4    1.80", "  -583.4    1.80", 78, None),
        // A size that is no number in an old table without redop.
        (AG_2019, "        1008            21", "        1008            2l", 27, None),
    ]);
}

#[test]
fn rank_line_that_does_not_parse_names_its_line() {
    let (from, to) = ("#   Rank  3 Pid    746 on", "#   Rank  x Pid    746 on");
    check_refused(&[(OLD_V100, from, to, 7, None)]);
}

#[test]
fn header_with_columns_collbench_does_not_read_is_refused() {
    // `-I 1`-style extra columns after #wrong.
    let (from, to) = ("busbw  #wrong     time", "busbw  #wrong  i_min     time");
    check_refused(&[(AR_218, from, to, 18, None)]);
}

/// The ten-node log with its first row's in-place half cut off and its second row's
/// out-of-place half blanked as nccl-tests blanks a half it did not run (32 spaces): each
/// reads as the half it has, the other as not measured.
#[test]
fn a_row_with_one_half_reads_as_that_half() {
    let lines: Vec<String> = TEN_NODE.text.lines().map(str::to_string).collect();
    let first = lines
        .iter()
        .position(|l| l.starts_with("    33554432"))
        .unwrap();
    let mut edited = lines.clone();
    // `    33554432  4194304  double  sum  -1  798.52  42.02  82.99  0  857.09 ...`
    let row = &lines[first];
    edited[first] = row[..row.find("  857.09").unwrap()].to_string();
    let second = &lines[first + 1];
    let (pre, rest) = second.split_at(52);
    let in_place = &rest[33..];
    edited[first + 1] = format!("{pre}{}{in_place}", " ".repeat(32));
    let runs = parse(&(edited.join("\n") + "\n")).unwrap();
    let rows = &runs[0].rows;
    assert_eq!(rows.len(), 10);
    assert_eq!(
        rows[0].out_of_place.as_ref().map(|h| h.time_us),
        Some(798.52)
    );
    assert!(rows[0].in_place.is_none());
    assert!(rows[1].out_of_place.is_none());
    assert_eq!(rows[1].in_place.as_ref().map(|h| h.time_us), Some(962.96));
    assert_eq!(rows[2].in_place.as_ref().map(|h| h.time_us), Some(1408.05));
}
