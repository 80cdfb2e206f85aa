//! The nccl-tests text reader against the real logs in tests/data/import/nccl-tests (see the
//! README there for their sources): every expected value below was read off the log itself.

use super::*;
use crate::import::log::{Half, LogRun, Row};

macro_rules! log {
    ($file:literal) => {
        include_str!(concat!("../../tests/data/import/nccl-tests/", $file))
    };
}

const OLD_V100: &str = log!("all_reduce_old_noroot_g8_v100_errorfloat.log");
const MULTI_2019: &str = log!("multi_coll_2019_g12_dgx2_old_percoll_columns.log");
const AG_2019: &str = log!("all_gather_2019_g12_noredop_column.log");
const BCAST_2019: &str = log!("broadcast_2019_g12_root_noredop.log");
const REDUCE_2019: &str = log!("reduce_2019_g12_redop_and_root.log");
const EFA_16: &str = log!("all_reduce_old_noroot_2node_16gpu_tagged_ncclinfo.log");
const T4: &str = log!("all_reduce_2node_2gpu_t4_tagged_ncclinfo_root.log");
const AR_218: &str = log!("all_reduce_v2.18.0_tagged_stderr_versionheader.log");
const AG_218: &str = log!("all_gather_v2.18.0_tagged_stderr_versionheader.log");
const MULTI_2178: &str =
    log!("multi_coll_v2.17.8_1node_8proc_h100_allreduce_allgather_rs_alltoall_sendrecv.log");
const TEN_NODE: &str = log!("all_reduce_v2.17.8_10node_80rank_h100.log");
const SMOKE: &str = log!("allreduce_sendrecv_smoke_v2.17.8_2node_h100.log");
const FAILED_MIDTABLE: &str =
    log!("alltoall_failed_midtable_then_sendrecv_exp_time_v2.17.6_2node_8rank.log");
const CUT_AFTER_HEADER: &str =
    log!("alltoall_ok_then_sendrecv_truncated_after_header_v2.17.6_2node.log");
const NO_VERSION: &str = log!("alltoall_sendrecv_starting_line_no_version_header_2node.log");

/// What a run says about itself, in one comparable value.
#[derive(Debug, PartialEq)]
struct Facts<'a> {
    test: Option<&'a str>,
    version: Option<&'a str>,
    library: Option<&'a str>,
    ranks: usize,
    hosts: Vec<&'a str>,
    gpu0: Option<&'a str>,
    lines: (usize, usize),
    truncated: bool,
    foreign: usize,
    rows: usize,
}

fn facts(run: &LogRun) -> Facts<'_> {
    let mut hosts: Vec<&str> = Vec::new();
    for r in &run.ranks {
        if !hosts.contains(&r.host.as_str()) {
            hosts.push(&r.host);
        }
    }
    Facts {
        test: run.test.as_deref(),
        version: run.tool_version.as_deref(),
        library: run.library.as_deref(),
        ranks: run.ranks.len(),
        hosts,
        gpu0: run.ranks.first().map(|r| r.gpu.as_str()),
        lines: (run.first_line, run.last_line),
        truncated: run.truncated,
        foreign: run.foreign_lines,
        rows: run.rows.len(),
    }
}

/// (time, algbw, busbw, wrong, error) of a half.
type H = (f64, Option<f64>, Option<f64>, Option<u64>, Option<f64>);

fn half(h: &Option<Half>) -> Option<H> {
    h.as_ref()
        .map(|h| (h.time_us, h.algbw_gbps, h.busbw_gbps, h.wrong, h.error))
}

/// (line, bytes, count, type, redop, root, out-of-place, in-place) of a row.
type R<'a> = (
    usize,
    u64,
    Option<u64>,
    &'a str,
    &'a str,
    Option<i64>,
    Option<H>,
    Option<H>,
);

fn row(r: &Row) -> R<'_> {
    (
        r.line,
        r.bytes,
        r.count,
        &r.type_name,
        &r.redop_name,
        r.root,
        half(&r.out_of_place),
        half(&r.in_place),
    )
}

fn first_and_last(run: &LogRun) -> (R<'_>, R<'_>) {
    (
        row(run.rows.first().expect("a row")),
        row(run.rows.last().expect("a row")),
    )
}

fn parse_ok(text: &str) -> Vec<LogRun> {
    match parse(text) {
        Ok(runs) => runs,
        Err(e) => panic!("parse failed: {e:?}"),
    }
}

const V100_SXM2: &str = "Tesla V100-SXM2-16GB";
const V100_SXM3: &str = "Tesla V100-SXM3-32GB";
const H100: &str = "NVIDIA H100 80GB HBM3";

#[test]
fn old_release_without_root_with_float_error_column() {
    let runs = parse_ok(OLD_V100);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        facts(run),
        Facts {
            test: None,
            version: None,
            library: None,
            ranks: 8,
            hosts: vec!["9a417caaf03b"],
            gpu0: Some(V100_SXM2),
            lines: (1, 42),
            truncated: false,
            foreign: 0,
            rows: 25,
        }
    );
    assert_eq!(
        first_and_last(run),
        (
            (
                16,
                8,
                Some(2),
                "float",
                "sum",
                None,
                Some((48.46, Some(0.0), Some(0.0), None, Some(1e-7))),
                Some((48.17, Some(0.0), Some(0.0), None, Some(1e-7))),
            ),
            (
                40,
                134217728,
                Some(33554432),
                "float",
                "sum",
                None,
                Some((1818.8, Some(73.80), Some(129.14), None, Some(2e-7))),
                Some((1821.9, Some(73.67), Some(128.92), None, Some(2e-7))),
            )
        )
    );
    // The second row's error is 6e-08, printed `%5.0le`.
    assert_eq!(run.rows[1].out_of_place.as_ref().unwrap().error, Some(6e-8));
    // All ranks in one process (`-g 8`), devices 0..7.
    assert!(run.ranks.iter().all(|r| r.pid == Some(746)));
    let devices: Vec<Option<u32>> = run.ranks.iter().map(|r| r.device).collect();
    assert_eq!(devices, (0..8).map(Some).collect::<Vec<_>>());
    let ranks: Vec<usize> = run.ranks.iter().map(|r| r.rank).collect();
    assert_eq!(ranks, (0..8).collect::<Vec<_>>());
    // Header settings of the old header (no agg iters, no graph).
    let h = &run.header;
    assert_eq!(h.get("nThread").map(String::as_str), Some("1"));
    assert_eq!(h.get("nGpus").map(String::as_str), Some("8"));
    assert_eq!(h.get("minBytes").map(String::as_str), Some("8"));
    assert_eq!(h.get("maxBytes").map(String::as_str), Some("134217728"));
    assert_eq!(h.get("step").map(String::as_str), Some("2(factor)"));
    assert_eq!(h.get("warmup iters").map(String::as_str), Some("5"));
    assert_eq!(h.get("iters").map(String::as_str), Some("20"));
    assert_eq!(h.get("validation").map(String::as_str), Some("1"));
    assert_eq!(h.len(), 8, "{h:?}");
    assert_eq!(run.header_number("iters"), Some(20));
    assert_eq!(run.header_number("agg iters"), None);
    // Times of 100 us and more are printed with one decimal.
    let step = |i: usize| run.rows[i].out_of_place.as_ref().unwrap().time_step_us;
    assert_eq!(step(0), 0.01);
    assert_eq!(step(24), 0.1);
    assert_eq!((run.env_algo.clone(), run.env_proto.clone()), (None, None));
}

#[test]
fn old_all_gather_has_no_redop_column() {
    let runs = parse_ok(AG_2019);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        facts(run),
        Facts {
            test: None,
            version: None,
            library: None,
            ranks: 12,
            hosts: vec!["seville"],
            gpu0: Some(V100_SXM3),
            lines: (1, 52),
            truncated: false,
            foreign: 0,
            rows: 31,
        }
    );
    assert_eq!(
        first_and_last(run),
        (
            (
                20,
                0,
                Some(0),
                "float",
                "none",
                None,
                Some((57.30, Some(0.0), Some(0.0), None, Some(0.0))),
                Some((57.09, Some(0.0), Some(0.0), None, Some(0.0))),
            ),
            (
                50,
                8589934560,
                Some(178956970),
                "float",
                "none",
                None,
                Some((106773.0, Some(73.75), Some(73.75), None, Some(1.0))),
                Some((70089.0, Some(112.34), Some(112.34), None, Some(1.0))),
            )
        )
    );
    // Three `0 0` rows, then 48 B = 12 ranks x 1 float (the count is per rank).
    let sizes: Vec<(u64, Option<u64>)> = run.rows[..5].iter().map(|r| (r.bytes, r.count)).collect();
    assert_eq!(
        sizes,
        vec![
            (0, Some(0)),
            (0, Some(0)),
            (0, Some(0)),
            (48, Some(1)),
            (96, Some(2))
        ]
    );
    // The first row with an error of 1: 4294967280 B.
    let failed: Vec<u64> = run
        .rows
        .iter()
        .filter(|r| r.out_of_place.as_ref().unwrap().error == Some(1.0))
        .map(|r| r.bytes)
        .collect();
    assert_eq!(failed, vec![4294967280, 8589934560]);
    // A time of 10000 us and more has no decimals.
    assert_eq!(
        run.rows[27].out_of_place.as_ref().unwrap().time_step_us,
        1.0
    );
}

#[test]
fn old_broadcast_has_root_but_no_redop() {
    let runs = parse_ok(BCAST_2019);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        facts(run),
        Facts {
            test: None,
            version: None,
            library: None,
            ranks: 12,
            hosts: vec!["seville"],
            gpu0: Some(V100_SXM3),
            lines: (1, 52),
            truncated: false,
            foreign: 0,
            rows: 31,
        }
    );
    assert_eq!(
        first_and_last(run),
        (
            (
                20,
                8,
                Some(2),
                "float",
                "none",
                Some(0),
                Some((59.75, Some(0.0), Some(0.0), None, Some(0.0))),
                Some((59.96, Some(0.0), Some(0.0), None, Some(0.0))),
            ),
            (
                50,
                8589934592,
                Some(2147483648),
                "float",
                "none",
                Some(0),
                Some((70321.0, Some(122.15), Some(122.15), None, Some(0.0))),
                Some((70368.0, Some(122.07), Some(122.07), None, Some(0.0))),
            )
        )
    );
    assert!(run.rows.iter().all(|r| r.root == Some(0)));
}

#[test]
fn old_reduce_has_redop_and_root() {
    let runs = parse_ok(REDUCE_2019);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        facts(run),
        Facts {
            test: None,
            version: None,
            library: None,
            ranks: 12,
            hosts: vec!["seville"],
            gpu0: Some(V100_SXM3),
            lines: (1, 52),
            truncated: false,
            foreign: 0,
            rows: 31,
        }
    );
    assert_eq!(
        first_and_last(run),
        (
            (
                20,
                8,
                Some(2),
                "float",
                "sum",
                Some(0),
                Some((58.15, Some(0.0), Some(0.0), None, Some(2e-7))),
                Some((59.52, Some(0.0), Some(0.0), None, Some(1e-7))),
            ),
            (
                50,
                8589934592,
                Some(2147483648),
                "float",
                "sum",
                Some(0),
                Some((69989.0, Some(122.73), Some(122.73), None, Some(2e-7))),
                Some((70007.0, Some(122.70), Some(122.70), None, Some(2e-7))),
            )
        )
    );
}

#[test]
fn old_multi_collective_file_keeps_each_tables_columns() {
    let runs = parse_ok(MULTI_2019);
    assert_eq!(runs.len(), 5);
    let expect = [
        (
            "all_gather_perf",
            (2, 53),
            "none",
            None,
            (21, 0),
            (51, 8589934560),
        ),
        (
            "all_reduce_perf",
            (56, 107),
            "sum",
            None,
            (75, 8),
            (105, 8589934592),
        ),
        (
            "broadcast_perf",
            (110, 161),
            "none",
            Some(0),
            (129, 8),
            (159, 8589934592),
        ),
        (
            "reduce_perf",
            (164, 215),
            "sum",
            Some(0),
            (183, 8),
            (213, 8589934592),
        ),
        (
            "reduce_scatter_perf",
            (218, 269),
            "sum",
            None,
            (237, 0),
            (267, 8589934560),
        ),
    ];
    for (run, (test, lines, redop, root, first, last)) in runs.iter().zip(expect) {
        assert_eq!(
            facts(run),
            Facts {
                test: Some(test),
                version: None,
                library: None,
                ranks: 12,
                hosts: vec!["seville"],
                gpu0: Some(V100_SXM3),
                lines,
                truncated: false,
                foreign: 0,
                rows: 31,
            },
            "{test}"
        );
        let f = run.rows.first().unwrap();
        let l = run.rows.last().unwrap();
        assert_eq!(
            ((f.line, f.bytes), (l.line, l.bytes)),
            (first, last),
            "{test}"
        );
        assert!(
            run.rows
                .iter()
                .all(|r| r.redop_name == redop && r.root == root),
            "{test}"
        );
    }
    // The all_reduce run: its first row has different errors in its two halves.
    assert_eq!(
        row(&runs[1].rows[0]),
        (
            75,
            8,
            Some(2),
            "float",
            "sum",
            None,
            Some((61.03, Some(0.0), Some(0.0), None, Some(2e-7))),
            Some((61.04, Some(0.0), Some(0.0), None, Some(1e-7))),
        )
    );
    assert_eq!(
        row(runs[4].rows.last().unwrap()),
        (
            267,
            8589934560,
            Some(178956970),
            "float",
            "sum",
            None,
            Some((122722.0, Some(64.16), Some(64.16), None, Some(2e-7))),
            Some((123574.0, Some(63.72), Some(63.72), None, Some(2e-7))),
        )
    );
    // The runs of the whole file are those of the single-run extracts, one line further down.
    let shifted = |runs: &[LogRun]| -> Vec<(u64, Option<H>, Option<H>)> {
        runs[0]
            .rows
            .iter()
            .map(|r| (r.bytes, half(&r.out_of_place), half(&r.in_place)))
            .collect()
    };
    assert_eq!(shifted(&runs[0..1]), shifted(&parse_ok(AG_2019)));
    assert_eq!(shifted(&runs[2..3]), shifted(&parse_ok(BCAST_2019)));
    assert_eq!(shifted(&runs[3..4]), shifted(&parse_ok(REDUCE_2019)));
}

#[test]
fn tagged_mpirun_output_with_nccl_info_between_header_and_rows() {
    let runs = parse_ok(EFA_16);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        facts(run),
        Facts {
            test: None,
            version: None,
            library: Some("NCCL 2.9.9"),
            ranks: 16,
            hosts: vec!["nccl-tests-efa-16-worker-0", "nccl-tests-efa-16-worker-1"],
            gpu0: Some("A100-SXM4-40GB"),
            lines: (1, 123),
            truncated: false,
            // Lines 20-24, 26-49 and 54-91 are NCCL INFO (line 25 is `NCCL version`).
            foreign: 67,
            rows: 30,
        }
    );
    assert_eq!(
        first_and_last(run),
        (
            (
                92,
                8,
                Some(2),
                "float",
                "sum",
                None,
                Some((179.1, Some(0.0), Some(0.0), None, Some(2e-7))),
                Some((176.3, Some(0.0), Some(0.0), None, Some(1e-7))),
            ),
            (
                121,
                4294967296,
                Some(1073741824),
                "float",
                "sum",
                None,
                Some((183834.0, Some(23.36), Some(43.81), None, Some(5e-7))),
                Some((184216.0, Some(23.31), Some(43.72), None, Some(5e-7))),
            )
        )
    );
    let per_host: Vec<usize> = ["nccl-tests-efa-16-worker-0", "nccl-tests-efa-16-worker-1"]
        .iter()
        .map(|h| run.ranks.iter().filter(|r| r.host == *h).count())
        .collect();
    assert_eq!(per_host, vec![8, 8]);
    assert_eq!(run.ranks[15].rank, 15);
    assert_eq!(run.ranks[15].pid, Some(40));
    assert_eq!(run.ranks[15].device, Some(7));
    assert_eq!(run.header_number("iters"), Some(100));
}

#[test]
fn tagged_output_with_root_and_wrong_columns_and_zero_rows() {
    let runs = parse_ok(T4);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        facts(run),
        Facts {
            test: None,
            version: None,
            library: Some("NCCL 2.12.7"),
            ranks: 2,
            hosts: vec!["test-nccl-efa-worker-0", "test-nccl-efa-worker-1"],
            gpu0: Some("Tesla T4"),
            lines: (3, 92),
            truncated: false,
            // NCCL INFO lines 8-16, 18-52, 57 and 89-90.
            foreign: 47,
            rows: 31,
        }
    );
    assert_eq!(
        first_and_last(run),
        (
            (
                58,
                0,
                Some(0),
                "float",
                "sum",
                Some(-1),
                Some((6.36, Some(0.0), Some(0.0), Some(0), None)),
                Some((6.40, Some(0.0), Some(0.0), Some(0), None)),
            ),
            (
                88,
                1073741824,
                Some(268435456),
                "float",
                "sum",
                Some(-1),
                Some((344981.0, Some(3.11), Some(3.11), Some(0), None)),
                Some((344454.0, Some(3.12), Some(3.12), Some(0), None)),
            )
        )
    );
    assert_eq!(run.header.get("agg iters").map(String::as_str), Some("1"));
    assert_eq!(run.header.get("graph").map(String::as_str), Some("0"));
    assert_eq!(run.header.get("minBytes").map(String::as_str), Some("1"));
    assert_eq!(run.ranks[1].pid, Some(21));
    assert_eq!(run.ranks[1].device, Some(0));
    // `NET/OFI Setting NCCL_PROTO to "simple"` is the plugin's, not `set by environment`.
    assert_eq!(run.env_proto, None);
}

#[test]
fn version_header_and_collective_test_lines_of_2_18() {
    let runs = parse_ok(AR_218);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        facts(run),
        Facts {
            test: Some("all_reduce_perf_mpi"),
            version: Some("2.18.0"),
            library: Some("NCCL 2.29.7"),
            ranks: 2,
            hosts: vec!["lab"],
            gpu0: Some("NVIDIA GeForce RTX 5090"),
            lines: (11, 29),
            truncated: false,
            foreign: 0,
            rows: 8,
        }
    );
    assert_eq!(
        first_and_last(run),
        (
            (
                20,
                1048576,
                Some(262144),
                "float",
                "sum",
                Some(-1),
                Some((4366.46, Some(0.24), Some(0.24), Some(0), None)),
                Some((4365.21, Some(0.24), Some(0.24), Some(0), None)),
            ),
            (
                27,
                134217728,
                Some(33554432),
                "float",
                "sum",
                Some(-1),
                Some((58479.5, Some(2.30), Some(2.30), Some(0), None)),
                Some((58055.4, Some(2.31), Some(2.31), Some(0), None)),
            )
        )
    );
    // Two ranks share one GPU: same host, device and BDF, different pids.
    let pids: Vec<Option<u64>> = run.ranks.iter().map(|r| r.pid).collect();
    assert_eq!(pids, vec![Some(2994447), Some(2994448)]);
    assert!(run.ranks.iter().all(|r| r.device == Some(0)));
    assert_eq!(
        run.header.get("warmup iters").map(String::as_str),
        Some("10")
    );
    assert_eq!(run.header_number("iters"), Some(50));
    assert_eq!(run.header.get("unalign"), None);

    let runs = parse_ok(AG_218);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        facts(run),
        Facts {
            test: Some("all_gather_perf_mpi"),
            version: Some("2.18.0"),
            library: Some("NCCL 2.29.7"),
            ranks: 2,
            hosts: vec!["lab"],
            gpu0: Some("NVIDIA GeForce RTX 5090"),
            lines: (11, 29),
            truncated: false,
            foreign: 0,
            rows: 8,
        }
    );
    assert_eq!(
        first_and_last(run),
        (
            (
                20,
                1048576,
                Some(131072),
                "float",
                "none",
                Some(-1),
                Some((2191.72, Some(0.48), Some(0.24), Some(0), None)),
                Some((2194.02, Some(0.48), Some(0.24), Some(0), None)),
            ),
            (
                27,
                134217728,
                Some(16777216),
                "float",
                "none",
                Some(-1),
                Some((29185.2, Some(4.60), Some(2.30), Some(0), None)),
                Some((29349.9, Some(4.57), Some(2.29), Some(0), None)),
            )
        )
    );
}

#[test]
fn five_runs_of_2_17_8_with_not_available_in_place_checks() {
    let runs = parse_ok(MULTI_2178);
    assert_eq!(runs.len(), 5);
    type Edge = (u64, u64, &'static str, f64, f64);
    /// test, lines, first row, last row, whether the in-place half is checked.
    type Expect = (&'static str, (usize, usize), Edge, Edge, bool);
    let expect: [Expect; 5] = [
        (
            "all_reduce_perf",
            (3, 31),
            (33554432, 4194304, "sum", 182.87, 182.88),
            (17179869184, 2147483648, "sum", 62340.7, 62359.0),
            true,
        ),
        (
            "all_gather_perf",
            (38, 66),
            (33554432, 524288, "none", 123.44, 120.61),
            (17179869184, 268435456, "none", 41542.0, 41068.7),
            true,
        ),
        (
            "reduce_scatter_perf",
            (73, 101),
            (33554432, 524288, "sum", 111.83, 111.63),
            (17179869184, 268435456, "sum", 41211.4, 41174.3),
            true,
        ),
        (
            "alltoall_perf",
            (108, 136),
            (33554432, 524288, "none", 124.79, 123.64),
            (17179869184, 268435456, "none", 43193.3, 43289.4),
            false,
        ),
        (
            "sendrecv_perf",
            (143, 171),
            (33554432, 4194304, "sum", 422.19, 422.04),
            (17179869184, 2147483648, "sum", 46779.2, 46782.8),
            false,
        ),
    ];
    for (run, (test, lines, first, last, in_place_checked)) in runs.iter().zip(expect) {
        assert_eq!(
            facts(run),
            Facts {
                test: Some(test),
                version: Some("2.17.8"),
                library: Some("NCCL 2.29.2"),
                ranks: 8,
                hosts: vec!["cnode3-002"],
                gpu0: Some(H100),
                lines,
                truncated: false,
                foreign: 0,
                rows: 10,
            },
            "{test}"
        );
        let edge = |r: &Row| -> Edge {
            (
                r.bytes,
                r.count.unwrap(),
                match r.redop_name.as_str() {
                    "sum" => "sum",
                    "none" => "none",
                    _ => "other",
                },
                r.out_of_place.as_ref().unwrap().time_us,
                r.in_place.as_ref().unwrap().time_us,
            )
        };
        assert_eq!(edge(&run.rows[0]), first, "{test}");
        assert_eq!(edge(run.rows.last().unwrap()), last, "{test}");
        for r in &run.rows {
            assert_eq!(r.type_name, "double", "{test}");
            assert_eq!(r.out_of_place.as_ref().unwrap().wrong, Some(0), "{test}");
            let wrong = r.in_place.as_ref().unwrap().wrong;
            assert_eq!(
                wrong,
                in_place_checked.then_some(0),
                "{test} line {}",
                r.line
            );
        }
    }
    // A 7-digit pid pushes the rank line right.
    assert_eq!(runs[0].ranks[0].pid, Some(4180122));
    assert_eq!(runs[0].ranks[7].device, Some(7));
    assert_eq!(runs[0].rows[0].line, 20);
    assert_eq!(runs[4].rows[9].line, 169);
    // 11-digit sizes fill their field.
    assert_eq!(runs[0].rows[9].bytes, 17179869184);
}

#[test]
fn ten_hosts_and_eighty_ranks() {
    let runs = parse_ok(TEN_NODE);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let hosts: Vec<String> = (2..=11).map(|i| format!("cnode3-{i:03}")).collect();
    let f = facts(run);
    assert_eq!(
        f.hosts,
        hosts.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(
        f,
        Facts {
            test: Some("all_reduce_perf"),
            version: Some("2.17.8"),
            library: Some("NCCL 2.29.2"),
            ranks: 80,
            hosts: f.hosts.clone(),
            gpu0: Some(H100),
            lines: (3, 103),
            truncated: false,
            foreign: 0,
            rows: 10,
        }
    );
    for (i, r) in run.ranks.iter().enumerate() {
        assert_eq!(r.rank, i);
        assert_eq!(r.host, hosts[i / 8]);
        assert_eq!(r.device, Some((i % 8) as u32));
        assert_eq!(r.gpu, H100);
    }
    assert_eq!(run.ranks[0].pid, Some(2627782));
    assert_eq!(run.ranks[79].pid, Some(1607276));
    assert_eq!(
        first_and_last(run),
        (
            (
                92,
                33554432,
                Some(4194304),
                "double",
                "sum",
                Some(-1),
                Some((798.52, Some(42.02), Some(82.99), Some(0), None)),
                Some((857.09, Some(39.15), Some(77.32), Some(0), None)),
            ),
            (
                101,
                17179869184,
                Some(2147483648),
                "double",
                "sum",
                Some(-1),
                Some((105854.0, Some(162.30), Some(320.54), Some(0), None)),
                Some((105146.0, Some(163.39), Some(322.70), Some(0), None)),
            )
        )
    );
}

#[test]
fn two_invocations_in_one_file() {
    let runs = parse_ok(SMOKE);
    assert_eq!(runs.len(), 2);
    let expect = [
        (
            "all_reduce_perf",
            (3, 18),
            (12, 837.47, 849.70, Some(0)),
            (16, 11591.0, 11556.7, Some(0)),
        ),
        (
            "sendrecv_perf",
            (25, 40),
            (34, 838.43, 787.24, None),
            (38, 12322.0, 12299.3, None),
        ),
    ];
    for (run, (test, lines, first, last)) in runs.iter().zip(expect) {
        assert_eq!(
            facts(run),
            Facts {
                test: Some(test),
                version: Some("2.17.8"),
                library: Some("NCCL 2.29.2"),
                ranks: 2,
                hosts: vec!["cnode3-002", "cnode3-003"],
                gpu0: Some(H100),
                lines,
                truncated: false,
                foreign: 0,
                rows: 5,
            }
        );
        let edge = |r: &Row| {
            (
                r.line,
                r.out_of_place.as_ref().unwrap().time_us,
                r.in_place.as_ref().unwrap().time_us,
                r.in_place.as_ref().unwrap().wrong,
            )
        };
        assert_eq!(edge(&run.rows[0]), first);
        assert_eq!(edge(&run.rows[4]), last);
        assert_eq!(
            (run.rows[0].bytes, run.rows[4].bytes),
            (33554432, 536870912)
        );
    }
    assert_eq!(runs[0].ranks[1].pid, Some(945256));
    assert_eq!(runs[0].header_number("iters"), Some(5));
}

#[test]
fn failed_table_then_exponent_times() {
    let runs = parse_ok(FAILED_MIDTABLE);
    assert_eq!(runs.len(), 2);
    let hosts = vec!["cnode2-001", "cnode2-003"];
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
            hosts.clone(),
            Some(H100),
            3,
            true,
            0,
        )
    );
    // Lines 18-24: `Test NCCL failure` and ` .. pid: Test failure` lines.
    assert_eq!(failed.foreign, 7);
    assert_eq!(
        facts(&runs[1]),
        Facts {
            test: Some("sendrecv_perf"),
            version: Some("2.17.6"),
            library: Some("NCCL 2.28.7"),
            ranks: 8,
            hosts,
            gpu0: Some(H100),
            lines: (27, 53),
            truncated: false,
            foreign: 0,
            rows: 10,
        }
    );
    let last = runs[1].rows.last().unwrap();
    assert_eq!(
        row(last),
        (
            51,
            17179869184,
            Some(2147483648),
            "double",
            "sum",
            Some(-1),
            Some((1.6e7, Some(1.09), Some(1.09), Some(0), None)),
            Some((1.7e7, Some(1.03), Some(1.03), None, None)),
        )
    );
    // `1.6e+07` stands for anything within 0.05e7 of it.
    assert_eq!(last.out_of_place.as_ref().unwrap().time_step_us, 1e6);
    assert_eq!(
        row(&runs[1].rows[0]),
        (
            42,
            33554432,
            Some(4194304),
            "double",
            "sum",
            Some(-1),
            Some((3809.85, Some(8.81), Some(8.81), Some(0), None)),
            Some((3875.27, Some(8.66), Some(8.66), None, None)),
        )
    );
    // `%7s` fallbacks: 7 digits without decimals.
    assert_eq!(
        runs[1].rows[7].out_of_place.as_ref().unwrap().time_us,
        1571853.0
    );
}

#[test]
fn failed_table_ends_at_its_own_last_line() {
    let runs = parse_ok(FAILED_MIDTABLE);
    // Line 25 (`# nccl-tests version`) and 26 (`# Collective test starting: sendrecv_perf`)
    // belong to the next run.
    let last = runs[0].last_line;
    assert!((17..=24).contains(&last), "last_line {last}");
}

#[test]
fn file_that_ends_right_after_a_column_header() {
    let runs = parse_ok(CUT_AFTER_HEADER);
    assert_eq!(runs.len(), 2);
    let hosts = vec!["cnode2-002", "cnode2-008"];
    assert_eq!(
        facts(&runs[0]),
        Facts {
            test: Some("alltoall_perf"),
            version: Some("2.17.6"),
            library: Some("NCCL 2.28.7"),
            ranks: 2,
            hosts: hosts.clone(),
            gpu0: Some(H100),
            lines: (3, 23),
            truncated: false,
            foreign: 0,
            rows: 10,
        }
    );
    assert_eq!(
        first_and_last(&runs[0]),
        (
            (
                12,
                33554432,
                Some(2097152),
                "double",
                "none",
                Some(-1),
                Some((1299.79, Some(25.82), Some(12.91), Some(0), None)),
                Some((1280.15, Some(26.21), Some(13.11), None, None)),
            ),
            (
                21,
                17179869184,
                Some(1073741824),
                "double",
                "none",
                Some(-1),
                Some((638886.0, Some(26.89), Some(13.45), Some(0), None)),
                Some((635731.0, Some(27.02), Some(13.51), None, None)),
            )
        )
    );
    assert_eq!(
        facts(&runs[1]),
        Facts {
            test: Some("sendrecv_perf"),
            version: Some("2.17.6"),
            library: Some("NCCL 2.28.7"),
            ranks: 2,
            hosts,
            gpu0: Some(H100),
            lines: (29, 37),
            truncated: true,
            foreign: 0,
            rows: 0,
        }
    );
}

#[test]
fn collective_test_starting_without_version_header() {
    let runs = parse_ok(NO_VERSION);
    assert_eq!(runs.len(), 2);
    let hosts = vec!["cnode4-005", "cnode4-006"];
    for (run, (test, lines)) in runs
        .iter()
        .zip([("alltoall_perf", (2, 22)), ("sendrecv_perf", (27, 47))])
    {
        assert_eq!(
            facts(run),
            Facts {
                test: Some(test),
                version: None,
                library: None,
                ranks: 2,
                hosts: hosts.clone(),
                gpu0: Some(H100),
                lines,
                truncated: false,
                foreign: 0,
                rows: 10,
            }
        );
    }
    assert_eq!(
        first_and_last(&runs[0]),
        (
            (
                11,
                33554432,
                Some(2097152),
                "double",
                "none",
                Some(-1),
                Some((856.0, Some(39.20), Some(19.60), Some(0), None)),
                Some((842.7, Some(39.82), Some(19.91), None, None)),
            ),
            (
                20,
                17179869184,
                Some(1073741824),
                "double",
                "none",
                Some(-1),
                Some((316077.0, Some(54.35), Some(27.18), Some(0), None)),
                Some((315105.0, Some(54.52), Some(27.26), None, None)),
            )
        )
    );
    // The pre-getFloatStr `%7.1f` keeps a trailing zero: `856.0` is to 0.1 us.
    assert_eq!(
        runs[0].rows[0].out_of_place.as_ref().unwrap().time_step_us,
        0.1
    );
    let s = &runs[1];
    assert_eq!(
        (
            s.rows[0].line,
            s.rows[0].out_of_place.as_ref().unwrap().time_us
        ),
        (36, 1492.4)
    );
    assert_eq!(
        (s.rows[9].line, s.rows[9].in_place.as_ref().unwrap().time_us),
        (45, 629508.0)
    );
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
    let full = parse_ok(AR_218);
    // Line 27 is the last row (`[1,0]<stdout>:   134217728 ... 58479.5 ...`).
    let line27 = AR_218.lines().nth(26).unwrap();
    assert!(line27.contains("58479.5"), "{line27}");
    let at = line27.find("58479.5").unwrap();
    for keep in [
        at + 3,
        at + 7,
        line27.find("58055").unwrap() + 2,
        line27.len() - 8,
    ] {
        let text = cut_inside_line(AR_218, 27, keep);
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
    let text = cut_inside_line(AR_218, 28, 0);
    let runs = parse_ok(text);
    assert_eq!(runs[0].rows, full[0].rows);
    assert!(runs[0].truncated);
    assert_eq!(runs[0].last_line, 27);
}

#[test]
fn log_cut_in_the_middle_of_a_row_of_the_second_run() {
    let full = parse_ok(SMOKE);
    // Line 36 is the third row of the sendrecv run.
    let line = SMOKE.lines().nth(35).unwrap();
    assert!(line.contains("3108.44"), "{line}");
    let runs = parse_ok(cut_inside_line(SMOKE, 36, line.find("3108.44").unwrap()));
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0], full[0]);
    assert_eq!(runs[1].rows[..], full[1].rows[..2]);
    assert!(runs[1].truncated);
    assert_eq!(runs[1].last_line, 35);
}

#[test]
fn log_cut_inside_the_last_field_of_its_last_row() {
    let full = parse_ok(OLD_V100);
    // Line 40, the last row, ends in the in-place error `2e-07`.
    let line = OLD_V100.lines().nth(39).unwrap();
    assert!(line.ends_with("2e-07"), "{line}");
    for keep in [line.len() - 4, line.len() - 1] {
        let text = cut_inside_line(OLD_V100, 40, keep);
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
    let osu = include_str!("../../tests/data/import/osu/osu_allreduce_v7.4_default_2node_char.txt");
    assert!(parse(osu).is_err());
}

#[test]
fn row_that_does_not_parse_in_the_middle_of_a_table_names_its_line() {
    // Line 14 of the smoke log is `134217728 16777216 double sum -1 3014.94 ...`.
    let bad = SMOKE.replacen("3014.94", "3O14.94", 1);
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 14, "{e:?}");
    assert!(e.msg.contains("3O14.94"), "{}", e.msg);

    // A field missing from a row that is not the last one.
    let bad = SMOKE.replacen("   44.52   44.52       0", "   44.52       0", 1);
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 14, "{e:?}");
    assert!(e.msg.contains("12 fields"), "{}", e.msg);

    // A negative time in a tagged, NCCL INFO interleaved log.
    let bad = T4.replacen("   583.4    1.80", "  -583.4    1.80", 1);
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 78, "{e:?}");

    // A size that is no number in an old table without redop.
    let bad = AG_2019.replacen(
        "        1008            21",
        "        1008            2l",
        1,
    );
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 27, "{e:?}");
}

#[test]
fn rank_line_that_does_not_parse_names_its_line() {
    let bad = OLD_V100.replacen("#   Rank  3 Pid    746 on", "#   Rank  x Pid    746 on", 1);
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 7, "{e:?}");
}

#[test]
fn header_with_columns_collbench_does_not_read_is_refused() {
    // `-I 1`-style extra columns after #wrong.
    let bad = AR_218.replacen("busbw  #wrong     time", "busbw  #wrong  i_min     time", 1);
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 18, "{e:?}");
}
