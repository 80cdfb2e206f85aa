//! Logs of old nccl-tests releases (2019 to NCCL 2.9): no version header, no `#wrong` column
//! but a float `error`, tables with or without `redop` and `root` columns.

use super::*;

/// One process driving 8 V100s (`-g 8`).
const V100_BOX: Setup = Setup {
    version: None,
    library: None,
    ranks: 8,
    hosts: &["9a417caaf03b"],
    gpu0: Some(V100_SXM2),
};

/// A DGX-2 driving 12 of its GPUs (`-g 12`).
const SEVILLE: Setup = Setup {
    version: None,
    library: None,
    ranks: 12,
    hosts: &["seville"],
    gpu0: Some(V100_SXM3),
};

/// Two EFA nodes of 8 A100s each, under mpirun.
const EFA_PAIR: Setup = Setup {
    version: None,
    library: Some("NCCL 2.9.9"),
    ranks: 16,
    hosts: &["nccl-tests-efa-16-worker-0", "nccl-tests-efa-16-worker-1"],
    gpu0: Some("A100-SXM4-40GB"),
};

#[rustfmt::skip]
const RUNS: &[Expected] = &[
    Expected {
        log: OLD_V100, run: (0, 1), test: None, setup: V100_BOX,
        lines: (1, 42), truncated: false, foreign: 0, rows: 25, kind: ("float", "sum", None),
        edges: Some((
            (16, 8, Some(2), err(48.46, 0.0, 0.0, 1e-7), err(48.17, 0.0, 0.0, 1e-7)),
            (40, 134217728, Some(33554432),
             err(1818.8, 73.80, 129.14, 2e-7), err(1821.9, 73.67, 128.92, 2e-7)),
        )),
    },
    Expected {
        log: AG_2019, run: (0, 1), test: None, setup: SEVILLE,
        lines: (1, 52), truncated: false, foreign: 0, rows: 31, kind: ("float", "none", None),
        edges: Some((
            (20, 0, Some(0), err(57.30, 0.0, 0.0, 0.0), err(57.09, 0.0, 0.0, 0.0)),
            (50, 8589934560, Some(178956970),
             err(106773.0, 73.75, 73.75, 1.0), err(70089.0, 112.34, 112.34, 1.0)),
        )),
    },
    Expected {
        log: BCAST_2019, run: (0, 1), test: None, setup: SEVILLE,
        lines: (1, 52), truncated: false, foreign: 0, rows: 31, kind: ("float", "none", Some(0)),
        edges: Some((
            (20, 8, Some(2), err(59.75, 0.0, 0.0, 0.0), err(59.96, 0.0, 0.0, 0.0)),
            (50, 8589934592, Some(2147483648),
             err(70321.0, 122.15, 122.15, 0.0), err(70368.0, 122.07, 122.07, 0.0)),
        )),
    },
    Expected {
        log: REDUCE_2019, run: (0, 1), test: None, setup: SEVILLE,
        lines: (1, 52), truncated: false, foreign: 0, rows: 31, kind: ("float", "sum", Some(0)),
        edges: Some((
            (20, 8, Some(2), err(58.15, 0.0, 0.0, 2e-7), err(59.52, 0.0, 0.0, 1e-7)),
            (50, 8589934592, Some(2147483648),
             err(69989.0, 122.73, 122.73, 2e-7), err(70007.0, 122.70, 122.70, 2e-7)),
        )),
    },
    Expected {
        log: MULTI_2019, run: (0, 5), test: Some("all_gather_perf"), setup: SEVILLE,
        lines: (2, 53), truncated: false, foreign: 0, rows: 31, kind: ("float", "none", None),
        edges: Some((
            (21, 0, Some(0), err(57.30, 0.0, 0.0, 0.0), err(57.09, 0.0, 0.0, 0.0)),
            (51, 8589934560, Some(178956970),
             err(106773.0, 73.75, 73.75, 1.0), err(70089.0, 112.34, 112.34, 1.0)),
        )),
    },
    Expected {
        log: MULTI_2019, run: (1, 5), test: Some("all_reduce_perf"), setup: SEVILLE,
        // The first row has different errors in its two halves.
        lines: (56, 107), truncated: false, foreign: 0, rows: 31, kind: ("float", "sum", None),
        edges: Some((
            (75, 8, Some(2), err(61.03, 0.0, 0.0, 2e-7), err(61.04, 0.0, 0.0, 1e-7)),
            (105, 8589934592, Some(2147483648),
             err(127453.0, 67.40, 123.56, 2e-7), err(127443.0, 67.40, 123.57, 2e-7)),
        )),
    },
    Expected {
        log: MULTI_2019, run: (2, 5), test: Some("broadcast_perf"), setup: SEVILLE,
        lines: (110, 161), truncated: false, foreign: 0, rows: 31, kind: ("float", "none", Some(0)),
        edges: Some((
            (129, 8, Some(2), err(59.75, 0.0, 0.0, 0.0), err(59.96, 0.0, 0.0, 0.0)),
            (159, 8589934592, Some(2147483648),
             err(70321.0, 122.15, 122.15, 0.0), err(70368.0, 122.07, 122.07, 0.0)),
        )),
    },
    Expected {
        log: MULTI_2019, run: (3, 5), test: Some("reduce_perf"), setup: SEVILLE,
        lines: (164, 215), truncated: false, foreign: 0, rows: 31, kind: ("float", "sum", Some(0)),
        edges: Some((
            (183, 8, Some(2), err(58.15, 0.0, 0.0, 2e-7), err(59.52, 0.0, 0.0, 1e-7)),
            (213, 8589934592, Some(2147483648),
             err(69989.0, 122.73, 122.73, 2e-7), err(70007.0, 122.70, 122.70, 2e-7)),
        )),
    },
    Expected {
        log: MULTI_2019, run: (4, 5), test: Some("reduce_scatter_perf"), setup: SEVILLE,
        lines: (218, 269), truncated: false, foreign: 0, rows: 31, kind: ("float", "sum", None),
        edges: Some((
            (237, 0, Some(0), err(58.16, 0.0, 0.0, 0.0), err(58.77, 0.0, 0.0, 0.0)),
            (267, 8589934560, Some(178956970),
             err(122722.0, 64.16, 64.16, 2e-7), err(123574.0, 63.72, 63.72, 2e-7)),
        )),
    },
    Expected {
        log: EFA_16, run: (0, 1), test: None, setup: EFA_PAIR,
        // foreign: lines 20-24, 26-49 and 54-91 are NCCL INFO (line 25 is `NCCL version`).
        lines: (1, 123), truncated: false, foreign: 67, rows: 30, kind: ("float", "sum", None),
        edges: Some((
            (92, 8, Some(2), err(179.1, 0.0, 0.0, 2e-7), err(176.3, 0.0, 0.0, 1e-7)),
            (121, 4294967296, Some(1073741824),
             err(183834.0, 23.36, 43.81, 5e-7), err(184216.0, 23.31, 43.72, 5e-7)),
        )),
    },
];

#[test]
fn every_run_of_the_old_release_logs_reads_as_printed() {
    check_runs(RUNS);
}

#[test]
fn old_release_without_root_with_float_error_column() {
    let run = only_run(OLD_V100);
    // The second row's error is 6e-08, printed `%5.0le`.
    assert_eq!(out_of_place(&run, 1).error, Some(6e-8));
    // All ranks in one process (`-g 8`), devices 0..7.
    assert!(run.ranks.iter().all(|r| r.pid == Some(746)));
    let devices: Vec<Option<u32>> = run.ranks.iter().map(|r| r.device).collect();
    assert_eq!(devices, (0..8).map(Some).collect::<Vec<_>>());
    let ranks: Vec<usize> = run.ranks.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, (0..8).collect::<Vec<_>>());
    // Header settings of the old header (no agg iters, no graph).
    let settings: Vec<(&str, &str)> = run
        .header
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut expected = vec![
        ("nThread", "1"),
        ("nGpus", "8"),
        ("minBytes", "8"),
        ("maxBytes", "134217728"),
        ("step", "2(factor)"),
        ("warmup iters", "5"),
        ("iters", "20"),
        ("validation", "1"),
    ];
    expected.sort();
    assert_eq!(settings, expected);
    assert_eq!(run.header_number("iters"), Some(20));
    assert_eq!(run.header_number("agg iters"), None);
    // Times of 100 us and more are printed with one decimal.
    assert_eq!(out_of_place(&run, 0).time_step_us, 0.01);
    assert_eq!(out_of_place(&run, 24).time_step_us, 0.1);
    assert_eq!((run.env_algo.clone(), run.env_proto.clone()), (None, None));
}

#[test]
fn old_all_gather_has_no_redop_column() {
    let run = only_run(AG_2019);
    assert!(run.rows.iter().all(|r| r.redop_name == "none"));
    // Three `0 0` rows, then 48 B = 12 ranks x 1 float (the count is per rank).
    let sizes: Vec<(u64, Option<u64>)> = run.rows[..5].iter().map(|r| (r.bytes, r.count)).collect();
    let zero = (0, Some(0));
    assert_eq!(sizes, [zero, zero, zero, (48, Some(1)), (96, Some(2))]);
    // The first row with an error of 1: 4294967280 B.
    let failed: Vec<u64> = run
        .rows
        .iter()
        .filter(|r| r.out_of_place.as_ref().unwrap().error == Some(1.0))
        .map(|r| r.bytes)
        .collect();
    assert_eq!(failed, vec![4294967280, 8589934560]);
    // A time of 10000 us and more has no decimals.
    assert_eq!(out_of_place(&run, 27).time_step_us, 1.0);
}

#[test]
fn old_broadcast_has_root_but_no_redop() {
    let run = only_run(BCAST_2019);
    assert!(run
        .rows
        .iter()
        .all(|r| r.root == Some(0) && r.redop_name == "none"));
}

#[test]
fn old_reduce_has_redop_and_root() {
    let run = only_run(REDUCE_2019);
    assert!(run
        .rows
        .iter()
        .all(|r| r.root == Some(0) && r.redop_name == "sum"));
}

#[test]
fn old_multi_collective_file_keeps_each_tables_columns() {
    let runs = parse_ok(MULTI_2019.text);
    let columns: Vec<(&str, Option<i64>)> = runs
        .iter()
        .map(|run| (run.rows[0].redop_name.as_str(), run.rows[0].root))
        .collect();
    let expected = [
        ("none", None),
        ("sum", None),
        ("none", Some(0)),
        ("sum", Some(0)),
        ("sum", None),
    ];
    assert_eq!(columns, expected);
    // The runs of the whole file are those of the single-run extracts, further down.
    let shifted = |run: &LogRun| -> Vec<(u64, Option<H>, Option<H>)> {
        run.rows
            .iter()
            .map(|r| (r.bytes, half(&r.out_of_place), half(&r.in_place)))
            .collect()
    };
    for (i, extract) in [(0, AG_2019), (2, BCAST_2019), (3, REDUCE_2019)] {
        let alone = only_run(extract);
        assert_eq!(shifted(&runs[i]), shifted(&alone), "{}", extract.file);
    }
}

#[test]
fn tagged_mpirun_output_with_nccl_info_between_header_and_rows() {
    let run = only_run(EFA_16);
    let per_host: Vec<usize> = EFA_PAIR
        .hosts
        .iter()
        .map(|h| run.ranks.iter().filter(|r| r.host == *h).count())
        .collect();
    assert_eq!(per_host, vec![8, 8]);
    assert_eq!(run.ranks[15].rank, 15);
    assert_eq!(run.ranks[15].pid, Some(40));
    assert_eq!(run.ranks[15].device, Some(7));
    assert_eq!(run.header_number("iters"), Some(100));
}
