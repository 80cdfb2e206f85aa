//! Logs of current nccl-tests releases (NCCL 2.12 on, nccl-tests 2.17 and 2.18): `#wrong` and
//! `root` columns, version headers and `Collective test starting` lines, tagged mpirun output.

use super::*;

/// Two EFA nodes of one T4 each, under mpirun.
const T4_PAIR: Setup = Setup {
    version: None,
    library: Some("NCCL 2.12.7"),
    ranks: 2,
    hosts: &["test-nccl-efa-worker-0", "test-nccl-efa-worker-1"],
    gpu0: Some("Tesla T4"),
};

/// Two ranks sharing one GPU of one workstation.
const LAB: Setup = Setup {
    version: Some("2.18.0"),
    library: Some("NCCL 2.29.7"),
    ranks: 2,
    hosts: &["lab"],
    gpu0: Some("NVIDIA GeForce RTX 5090"),
};

/// One node of 8 H100s, one process each.
const H100_NODE: Setup = Setup {
    version: Some("2.17.8"),
    library: Some("NCCL 2.29.2"),
    ranks: 8,
    hosts: &["cnode3-002"],
    gpu0: Some(H100),
};

/// Ten nodes of 8 H100s each.
const TEN_H100_NODES: Setup = Setup {
    ranks: 80,
    hosts: &[
        "cnode3-002",
        "cnode3-003",
        "cnode3-004",
        "cnode3-005",
        "cnode3-006",
        "cnode3-007",
        "cnode3-008",
        "cnode3-009",
        "cnode3-010",
        "cnode3-011",
    ],
    ..H100_NODE
};

/// Two nodes of one H100 rank each.
const TWO_H100_NODES: Setup = Setup {
    ranks: 2,
    hosts: &["cnode3-002", "cnode3-003"],
    ..H100_NODE
};

/// The large-message tables of 2.17.8: 32 MiB to 16 GiB of doubles in 10 rows; each run
/// gives its own test, lines and edge rows.
const DOUBLES_10_ROWS: Expected = Expected {
    log: MULTI_2178,
    run: (0, 5),
    test: None,
    setup: H100_NODE,
    lines: (0, 0),
    truncated: false,
    foreign: 0,
    rows: 10,
    kind: ("double", "sum", Some(-1)),
    edges: None,
};

#[rustfmt::skip]
const RUNS: &[Expected] = &[
    Expected {
        log: T4, run: (0, 1), test: None, setup: T4_PAIR,
        // foreign: NCCL INFO lines 8-16, 18-52, 57 and 89-90.
        lines: (3, 92), truncated: false, foreign: 47, rows: 31, kind: ("float", "sum", Some(-1)),
        edges: Some((
            (58, 0, Some(0), ok(6.36, 0.0, 0.0), ok(6.40, 0.0, 0.0)),
            (88, 1073741824, Some(268435456), ok(344981.0, 3.11, 3.11), ok(344454.0, 3.12, 3.12)),
        )),
    },
    Expected {
        log: AR_218, run: (0, 1), test: Some("all_reduce_perf_mpi"), setup: LAB,
        lines: (11, 29), truncated: false, foreign: 0, rows: 8, kind: ("float", "sum", Some(-1)),
        edges: Some((
            (20, 1048576, Some(262144), ok(4366.46, 0.24, 0.24), ok(4365.21, 0.24, 0.24)),
            (27, 134217728, Some(33554432), ok(58479.5, 2.30, 2.30), ok(58055.4, 2.31, 2.31)),
        )),
    },
    Expected {
        log: AG_218, run: (0, 1), test: Some("all_gather_perf_mpi"), setup: LAB,
        lines: (11, 29), truncated: false, foreign: 0, rows: 8, kind: ("float", "none", Some(-1)),
        edges: Some((
            (20, 1048576, Some(131072), ok(2191.72, 0.48, 0.24), ok(2194.02, 0.48, 0.24)),
            (27, 134217728, Some(16777216), ok(29185.2, 4.60, 2.30), ok(29349.9, 4.57, 2.29)),
        )),
    },
    Expected {
        test: Some("all_reduce_perf"),
        lines: (3, 31),
        edges: Some((
            (20, 33554432, Some(4194304), ok(182.87, 183.49, 321.10), ok(182.88, 183.48, 321.08)),
            (29, 17179869184, Some(2147483648),
             ok(62340.7, 275.58, 482.27), ok(62359.0, 275.50, 482.12)),
        )),
        ..DOUBLES_10_ROWS
    },
    Expected {
        run: (1, 5), test: Some("all_gather_perf"),
        lines: (38, 66), kind: ("double", "none", Some(-1)),
        edges: Some((
            (55, 33554432, Some(524288), ok(123.44, 271.83, 237.85), ok(120.61, 278.20, 243.43)),
            (64, 17179869184, Some(268435456),
             ok(41542.0, 413.55, 361.86), ok(41068.7, 418.32, 366.03)),
        )),
        ..DOUBLES_10_ROWS
    },
    Expected {
        run: (2, 5), test: Some("reduce_scatter_perf"),
        lines: (73, 101),
        edges: Some((
            (90, 33554432, Some(524288), ok(111.83, 300.05, 262.55), ok(111.63, 300.58, 263.01)),
            (99, 17179869184, Some(268435456),
             ok(41211.4, 416.87, 364.76), ok(41174.3, 417.25, 365.09)),
        )),
        ..DOUBLES_10_ROWS
    },
    // alltoall and sendrecv do not check their in-place half: `N/A`.
    Expected {
        run: (3, 5), test: Some("alltoall_perf"),
        lines: (108, 136), kind: ("double", "none", Some(-1)),
        edges: Some((
            (125, 33554432, Some(524288), ok(124.79, 268.89, 235.28), na(123.64, 271.39, 237.47)),
            (134, 17179869184, Some(268435456),
             ok(43193.3, 397.74, 348.03), na(43289.4, 396.86, 347.25)),
        )),
        ..DOUBLES_10_ROWS
    },
    Expected {
        run: (4, 5), test: Some("sendrecv_perf"),
        lines: (143, 171),
        edges: Some((
            (160, 33554432, Some(4194304), ok(422.19, 79.48, 79.48), na(422.04, 79.51, 79.51)),
            (169, 17179869184, Some(2147483648),
             ok(46779.2, 367.25, 367.25), na(46782.8, 367.23, 367.23)),
        )),
        ..DOUBLES_10_ROWS
    },
    Expected {
        log: TEN_NODE, run: (0, 1), test: Some("all_reduce_perf"), setup: TEN_H100_NODES,
        lines: (3, 103),
        edges: Some((
            (92, 33554432, Some(4194304), ok(798.52, 42.02, 82.99), ok(857.09, 39.15, 77.32)),
            (101, 17179869184, Some(2147483648),
             ok(105854.0, 162.30, 320.54), ok(105146.0, 163.39, 322.70)),
        )),
        ..DOUBLES_10_ROWS
    },
    // Two invocations in one file, of 32 MiB to 512 MiB each.
    Expected {
        log: SMOKE, run: (0, 2), test: Some("all_reduce_perf"), setup: TWO_H100_NODES,
        lines: (3, 18), rows: 5,
        edges: Some((
            (12, 33554432, Some(4194304), ok(837.47, 40.07, 40.07), ok(849.70, 39.49, 39.49)),
            (16, 536870912, Some(67108864), ok(11591.0, 46.32, 46.32), ok(11556.7, 46.46, 46.46)),
        )),
        ..DOUBLES_10_ROWS
    },
    Expected {
        log: SMOKE, run: (1, 2), test: Some("sendrecv_perf"), setup: TWO_H100_NODES,
        lines: (25, 40), rows: 5,
        edges: Some((
            (34, 33554432, Some(4194304), ok(838.43, 40.02, 40.02), na(787.24, 42.62, 42.62)),
            (38, 536870912, Some(67108864), ok(12322.0, 43.57, 43.57), na(12299.3, 43.65, 43.65)),
        )),
        ..DOUBLES_10_ROWS
    },
];

#[test]
fn every_run_of_the_current_release_logs_reads_as_printed() {
    check_runs(RUNS);
}

#[test]
fn tagged_output_with_root_and_wrong_columns_and_zero_rows() {
    let run = only_run(T4);
    assert_eq!(setting(&run, "agg iters"), Some("1"));
    assert_eq!(setting(&run, "graph"), Some("0"));
    assert_eq!(setting(&run, "minBytes"), Some("1"));
    assert_eq!(run.ranks[1].pid, Some(21));
    assert_eq!(run.ranks[1].device, Some(0));
    // `NET/OFI Setting NCCL_PROTO to "simple"` is the plugin's, not `set by environment`.
    assert_eq!(run.env_proto, None);
}

#[test]
fn version_header_and_collective_test_lines_of_2_18() {
    let run = only_run(AR_218);
    // Two ranks share one GPU: same host, device and BDF, different pids.
    let pids: Vec<Option<u64>> = run.ranks.iter().map(|r| r.pid).collect();
    assert_eq!(pids, vec![Some(2994447), Some(2994448)]);
    assert!(run.ranks.iter().all(|r| r.device == Some(0)));
    assert_eq!(setting(&run, "warmup iters"), Some("10"));
    assert_eq!(run.header_number("iters"), Some(50));
    assert_eq!(run.header.get("unalign"), None);
}

#[test]
fn five_runs_of_2_17_8_with_not_available_in_place_checks() {
    let runs = parse_ok(MULTI_2178.text);
    assert_eq!(runs.len(), 5);
    // Whether the in-place half is checked, run by run.
    let in_place_checked = [true, true, true, false, false];
    for (run, checked) in runs.iter().zip(in_place_checked) {
        let test = run.test.as_deref().unwrap_or("?");
        for r in &run.rows {
            assert_eq!(r.type_name, "double", "{test}");
            assert_eq!(r.out_of_place.as_ref().unwrap().wrong, Some(0), "{test}");
            let wrong = r.in_place.as_ref().unwrap().wrong;
            assert_eq!(wrong, checked.then_some(0), "{test} line {}", r.line);
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
    let run = only_run(TEN_NODE);
    let hosts: Vec<String> = (2..=11).map(|i| format!("cnode3-{i:03}")).collect();
    assert_eq!(facts(&run).hosts, hosts);
    for (i, r) in run.ranks.iter().enumerate() {
        assert_eq!(r.rank, i);
        assert_eq!(r.host, hosts[i / 8]);
        assert_eq!(r.device, Some((i % 8) as u32));
        assert_eq!(r.gpu, H100);
    }
    assert_eq!(run.ranks[0].pid, Some(2627782));
    assert_eq!(run.ranks[79].pid, Some(1607276));
}

#[test]
fn two_invocations_in_one_file() {
    let runs = parse_ok(SMOKE.text);
    let tests: Vec<Option<&str>> = runs.iter().map(|r| r.test.as_deref()).collect();
    assert_eq!(tests, [Some("all_reduce_perf"), Some("sendrecv_perf")]);
    assert_eq!(runs[0].ranks[1].pid, Some(945256));
    assert_eq!(runs[0].header_number("iters"), Some(5));
}
