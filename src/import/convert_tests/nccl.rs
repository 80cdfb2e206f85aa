//! nccl-tests logs as points: keys and metadata, the algorithm and protocol, wrong counts and
//! errors, skipped rows and the bandwidths old releases printed differently.

use super::*;

/// Flags that force the algorithm and protocol.
fn flags(algo: Option<Algo>, proto: Option<Proto>) -> Overrides {
    Overrides {
        algo,
        proto,
        ..Overrides::default()
    }
}

/// (algo, proto) of every point.
fn algos(c: &Converted) -> Vec<(Algo, Option<Proto>)> {
    c.records
        .iter()
        .map(|r| (r.key.algo, r.key.proto))
        .collect()
}

#[test]
fn all_reduce_2_18_as_points() {
    let (run, c) = nccl_points(AR_218, 0, Op::AllReduce);
    let times = [
        (1048576, 4366.46, 4365.21),
        (2097152, 4370.57, 4368.39),
        (4194304, 4374.00, 4375.49),
        (8388608, 4390.92, 4394.16),
        (16777216, 7728.29, 7659.38),
        (33554432, 14977.1, 14863.2),
        (67108864, 29341.4, 29337.0),
        (134217728, 58479.5, 58055.4),
    ];
    for (i, (bytes, out, inp)) in times.into_iter().enumerate() {
        for (rec, in_place, time) in [
            (&c.records[2 * i], false, out),
            (&c.records[2 * i + 1], true, inp),
        ] {
            assert_eq!(
                rec.key,
                PointKey {
                    backend: "nccl".into(),
                    op: Op::AllReduce,
                    algo: Algo::Auto,
                    dtype: DType::F32,
                    redop: ReduceOp::Sum,
                    world: 2,
                    nodes: 1,
                    bytes,
                    count: bytes / 4,
                    in_place,
                    proto: Some(Proto::Auto),
                    root: None,
                    comm: Default::default(),
                    traffic: None,
                    group: None,
                    concurrent: None,
                }
            );
            assert_eq!(rec.time_us_mean, time);
            let algbw = bytes as f64 / (time * 1e3);
            assert_eq!(rec.algbw_gbps, algbw);
            // 2 ranks: the AllReduce factor 2(n-1)/n is 1.
            assert_eq!(rec.busbw_gbps, algbw);
            // iters: 50 x agg iters: 1; warmup iters: 10.
            assert_eq!((rec.iters, rec.warmup), (50, 10));
            assert_eq!(rec.wrong, 0);
        }
    }
    // The printed bandwidth agrees: 134217728 B / 58479.5 us = 2.295 GB/s, printed 2.30.
    assert!((c.records[14].algbw_gbps - 2.30).abs() < 0.005);

    let m = &c.meta;
    assert_eq!(m.backend, "nccl");
    assert_eq!(m.transport, "unknown");
    assert_eq!((m.ranks, m.nodes), (2, 1));
    assert_eq!(m.hosts, vec!["lab".to_string()]);
    assert_eq!(m.rank_nodes, vec![0, 0]);
    assert_eq!(m.gpus, vec!["NVIDIA GeForce RTX 5090".to_string(); 2]);
    assert_eq!(m.library.as_deref(), Some("NCCL 2.29.7"));
    assert_eq!(m.host.hostname, "lab");
    assert_eq!(
        (m.host.os.as_str(), m.host.cpu_model.as_str(), m.host.cores),
        ("unknown", "unknown", 0)
    );
    assert_eq!(m.command_line, cmd());
    assert_eq!(m.options["imported"], serde_json::json!(true));
    assert_eq!(m.options["settings"]["iters"], serde_json::json!("50"));
    assert_eq!(m.options["settings"]["agg iters"], serde_json::json!("1"));

    let i = import(&c);
    assert_eq!(i.tool, "nccl-tests");
    assert_eq!(i.tool_version.as_deref(), Some("2.18.0"));
    assert_eq!(i.source, "logs/x.log");
    assert!(!i.per_iteration_samples);
    assert_eq!(i.algo_from, "unknown");
    assert_eq!(i.settings, run.header);
    assert!(!i.truncated);
    assert_eq!(i.notes, Vec::<String>::new());
    assert!(i.time_statistic.contains("average"), "{}", i.time_statistic);
}

#[test]
fn algo_and_proto_flags_override() {
    let run = nccl_run(AR_218.text, 0);
    let ov = flags(Some(Algo::Ring), Some(Proto::Simple));
    let c = nccl(&run, Op::AllReduce, &ov).unwrap();
    assert_eq!(algos(&c), vec![(Algo::Ring, Some(Proto::Simple)); 16]);
    assert_eq!(import(&c).algo_from, "flag");

    let c = nccl(&run, Op::AllReduce, &flags(None, Some(Proto::Ll128))).unwrap();
    assert_eq!(algos(&c), vec![(Algo::Auto, Some(Proto::Ll128)); 16]);
    assert_eq!(import(&c).algo_from, "flag");
}

#[test]
fn algo_and_proto_forced_by_environment_come_from_the_log() {
    // NCCL's INFO lines as rank 0 prints them before the header.
    let text = AR_218.text.replacen(
        "[1,0]<stdout>:# nThread",
        "[1,0]<stdout>:lab:2994447:2994447 [0] NCCL INFO NCCL_ALGO set by environment to Tree\n\
         [1,0]<stdout>:lab:2994447:2994447 [0] NCCL INFO NCCL_PROTO set by environment to LL\n\
         [1,0]<stdout>:# nThread",
        1,
    );
    let run = nccl_run(&text, 0);
    assert_eq!(run.env_algo.as_deref(), Some("Tree"));
    assert_eq!(run.env_proto.as_deref(), Some("LL"));
    let c = nccl(&run, Op::AllReduce, &Overrides::default()).unwrap();
    assert_eq!(algos(&c), vec![(Algo::Tree, Some(Proto::Ll)); 16]);
    assert_eq!(import(&c).algo_from, "log");
    // A flag beats the log.
    let c = nccl(&run, Op::AllReduce, &flags(Some(Algo::Ring), None)).unwrap();
    assert_eq!(algos(&c)[0], (Algo::Ring, Some(Proto::Ll)));
    assert_eq!(import(&c).algo_from, "flag");
}

#[test]
fn old_error_column_is_judged_by_the_tolerance() {
    let (_, c) = nccl_points(OLD_V100, 0, Op::AllReduce);
    let first = &c.records[0];
    assert_eq!((first.key.world, first.key.nodes), (8, 1));
    assert_eq!((first.iters, first.warmup), (20, 5));
    assert!(c.records.iter().all(|r| r.key.proto == Some(Proto::Auto)));
    // Errors of at most 2e-07 are within nccl-tests' float tolerance (1e-5): nothing wrong.
    assert!(c.records.iter().all(|r| r.wrong == 0));
    let i = import(&c);
    assert_eq!(i.tool_version, None);
    assert_eq!(i.root, None);
    assert_eq!(c.meta.library, None);
    assert_eq!(c.meta.hosts, vec!["9a417caaf03b".to_string()]);
    assert_eq!(c.meta.gpus, vec!["Tesla V100-SXM2-16GB".to_string(); 8]);
}

#[test]
fn not_available_wrong_counts_mean_unchecked() {
    // The 4 MiB row of the 2.18 log, as `-c 0` prints it: `N/A` in both #wrong columns.
    let line = AR_218.text.lines().nth(21).unwrap();
    assert!(line.contains("4374.00"), "{line}");
    let unchecked = line.replacen("       0  ", "     N/A  ", 1);
    let unchecked = unchecked.trim_end_matches('0').to_string() + "N/A";
    let text = AR_218.text.replacen(line, &unchecked, 1);
    let run = nccl_run(&text, 0);
    assert_eq!(run.rows[2].out_of_place.as_ref().unwrap().wrong, None);
    assert_eq!(run.rows[2].in_place.as_ref().unwrap().wrong, None);
    let c = nccl(&run, Op::AllReduce, &Overrides::default()).unwrap();
    assert_eq!(c.records.len(), 16);
    assert_eq!(c.records[4].wrong, 0);
    let i = import(&c);
    assert!(!i.checked);
    assert_eq!(i.max_error, None);
}

/// The line numbers the warnings that are no skips name.
fn mismatched_lines(c: &Converted) -> Vec<usize> {
    c.warnings
        .iter()
        .filter(|w| !w.contains("skipped"))
        .map(|w| {
            w.strip_prefix("line ")
                .and_then(|w| w.split(':').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{w}"))
        })
        .collect()
}

#[test]
fn old_all_gather_zero_rows_skipped_and_its_algbw_convention_reported() {
    let (_, c) = nccl_points(AG_2019, 0, Op::AllGather);
    let first = &c.records[0];
    assert_eq!((first.key.redop, first.key.world), (ReduceOp::Sum, 12));
    let skipped: Vec<&str> = c
        .warnings
        .iter()
        .filter(|w| w.contains("skipped"))
        .map(String::as_str)
        .collect();
    let skip = |line: usize| format!("line {line}: skipped: 0 B: nothing was moved");
    // Once per row, not once per half.
    let expected: Vec<String> = [20, 21, 22].into_iter().map(skip).collect();
    assert_eq!(skipped, expected);
    // This release printed algbw as per-rank bytes x (n-1) / time: from 2016 B on, the printed
    // value is 11/12 of bytes/time, outside the rounding (one half at lines 28 and 29, both
    // halves of lines 30 to 50).
    let mut expected = vec![28, 29];
    expected.extend((30..=50).flat_map(|l| [l, l]));
    assert_eq!(mismatched_lines(&c), expected);
    assert!(
        c.warnings[3].starts_with("line 28: algbw printed 0.03 GB/s"),
        "{}",
        c.warnings[3]
    );
    // The largest row: 8589934560 B in 106773 us is 80.45 GB/s, printed 73.75 (= x 11/12).
    assert!(c.warnings[45].starts_with("line 50: algbw printed 73.75 GB/s"));
    // The error column checks: `1e+00` (rows of 4294967280 and 8589934560 B) is beyond the
    // float tolerance, so at least one element was wrong; `0e+00` means none.
    let wrong: Vec<(usize, bool, u64)> = c
        .records
        .iter()
        .filter(|r| r.wrong != 0)
        .map(|r| (r.key.bytes, r.key.in_place, r.wrong))
        .collect();
    let both = |bytes| [(bytes, false, 1), (bytes, true, 1)];
    assert_eq!(wrong, [both(4294967280), both(8589934560)].concat());
    // The notes hold the 3 skips and the first 20 mismatches.
    let i = import(&c);
    assert_eq!(i.notes.len(), 23);
    assert_eq!(i.notes[0], skip(20));
    assert_eq!(i.notes[3], c.warnings[3]);
    assert_eq!(i.notes[22], c.warnings[22]);
}

#[test]
fn new_all_gather_counts_all_elements_and_agrees_with_its_bandwidths() {
    let (run, c) = nccl_points(MULTI_2178, 1, Op::AllGather);
    assert_eq!(run.test.as_deref(), Some("all_gather_perf"));
    // The log prints the count per rank: 8 ranks' doubles in all.
    for (r, row) in c.records.iter().zip(run.rows.iter().flat_map(|r| [r, r])) {
        assert_eq!(
            r.key.count as u64,
            row.count.unwrap() * 8,
            "line {}",
            row.line
        );
        assert_eq!(r.key.count * 8, r.key.bytes);
    }
}

#[test]
fn rooted_broadcast_records_its_root() {
    let (_, c) = nccl_points(BCAST_2019, 0, Op::Broadcast);
    assert_eq!(import(&c).root, Some(0));
    assert!(c.records.iter().all(|r| r.wrong == 0));
    // No reduction: recorded as sum.
    assert!(c.records.iter().all(|r| r.key.redop == ReduceOp::Sum));
}

#[test]
fn zero_byte_rows_are_skipped_with_a_warning() {
    let (_, c) = nccl_points(T4, 0, Op::AllReduce);
    let skip = |line: usize| format!("line {line}: skipped: 0 B: nothing was moved");
    let expected: Vec<String> = [58, 59].into_iter().map(skip).collect();
    assert_eq!(c.warnings, expected);
    let first = &c.records[0];
    assert_eq!((first.iters, first.warmup), (100, 5));
    // Two hosts, one rank each.
    assert_eq!((first.key.world, first.key.nodes), (2, 2));
    assert_eq!(c.meta.nodes, 2);
    let hosts = ["test-nccl-efa-worker-0", "test-nccl-efa-worker-1"];
    assert_eq!(c.meta.hosts, hosts);
    assert_eq!(c.meta.rank_nodes, vec![0, 1]);
    assert_eq!(c.meta.host.hostname, "test-nccl-efa-worker-0");
    assert_eq!(c.meta.library.as_deref(), Some("NCCL 2.12.7"));
    let i = import(&c);
    assert_eq!(i.notes.len(), 3);
    assert!(
        i.notes[0].starts_with("47 line(s) inside the run were not the benchmark's"),
        "{}",
        i.notes[0]
    );
    assert_eq!(i.notes[1], skip(58));
}

#[test]
fn ten_nodes_from_the_rank_list() {
    let (_, c) = nccl_points(TEN_NODE, 0, Op::AllReduce);
    let r = &c.records[19];
    assert_eq!((r.key.world, r.key.nodes), (80, 10));
    assert_eq!(
        c.meta.rank_nodes,
        (0..80).map(|i| i / 8).collect::<Vec<_>>()
    );
    assert_eq!(c.meta.hosts.len(), 10);
    assert_eq!(c.meta.hosts[9], "cnode3-011");
}

#[test]
fn world_flag_must_agree_with_the_rank_list() {
    let run = nccl_run(AR_218.text, 0);
    let world = |n| Overrides {
        world: Some(n),
        ..Overrides::default()
    };
    let e = nccl(&run, Op::AllReduce, &world(4)).unwrap_err();
    assert_eq!(e, "the log lists 2 ranks but --world is 4");
    let c = nccl(&run, Op::AllReduce, &world(2)).unwrap();
    assert_eq!(c.records[0].key.world, 2);
    // A log without a rank list needs --world.
    let e = convert(
        Tool::Osu,
        &osu_run(OSU_AR_FLOAT.text),
        Op::AllReduce,
        "osu.txt",
        &Overrides::default(),
        cmd(),
    )
    .unwrap_err();
    assert!(e.contains("--world"), "{e}");
}

#[test]
fn unknown_element_type_is_skipped_by_name() {
    let text = AR_218
        .text
        .replace("     float     sum", "      e2m1     sum");
    let run = nccl_run(&text, 0);
    let c = nccl(&run, Op::AllReduce, &Overrides::default()).unwrap();
    assert!(c.records.is_empty());
    assert_eq!(c.warnings.len(), 8);
    assert!(
        c.warnings[0].starts_with("line 20: skipped: element type 'e2m1'"),
        "{}",
        c.warnings[0]
    );
}
