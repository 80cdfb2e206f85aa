//! Converting runs parsed from the real logs in tests/data/import into collbench points and
//! metadata: every expected value is the log's own number or follows from it by the formula
//! named next to it.

use super::*;
use crate::import::{nccl_text, osu};

macro_rules! nccl_log {
    ($file:literal) => {
        include_str!(concat!("../../tests/data/import/nccl-tests/", $file))
    };
}
macro_rules! osu_file {
    ($file:literal) => {
        include_str!(concat!("../../tests/data/import/osu/", $file))
    };
}

const AR_218: &str = nccl_log!("all_reduce_v2.18.0_tagged_stderr_versionheader.log");
const OLD_V100: &str = nccl_log!("all_reduce_old_noroot_g8_v100_errorfloat.log");
const AG_2019: &str = nccl_log!("all_gather_2019_g12_noredop_column.log");
const BCAST_2019: &str = nccl_log!("broadcast_2019_g12_root_noredop.log");
const T4: &str = nccl_log!("all_reduce_2node_2gpu_t4_tagged_ncclinfo_root.log");
const MULTI_2178: &str =
    nccl_log!("multi_coll_v2.17.8_1node_8proc_h100_allreduce_allgather_rs_alltoall_sendrecv.log");
const TEN_NODE: &str = nccl_log!("all_reduce_v2.17.8_10node_80rank_h100.log");
const OSU_AR_CHAR: &str = osu_file!("osu_allreduce_v7.4_default_2node_char.txt");
const OSU_AG: &str = osu_file!("osu_allgather_v5.6.2_default_64rank_2node_impi.txt");
const OSU_AR_FLOAT: &str = osu_file!("osu_allreduce_v5.6.2_default_64rank_2node_impi.txt");
const OSU_REDUCE_FULL: &str = osu_file!("osu_reduce_cuda_v7.3_full_192rank_excerpt.txt");

fn nccl_run(text: &str, i: usize) -> LogRun {
    nccl_text::parse(text).expect("a real log parses").remove(i)
}

fn osu_run(text: &str) -> LogRun {
    osu::parse(text).expect("a real OSU file parses").remove(0)
}

fn cmd() -> Vec<String> {
    vec!["collbench".into(), "import".into(), "x.log".into()]
}

fn nccl(run: &LogRun, op: Op, ov: &Overrides) -> Result<Converted, String> {
    convert(Tool::NcclTests, run, op, "logs/x.log", ov, cmd())
}

fn osu_convert(run: &LogRun, op: Op, world: usize, nodes: usize) -> Converted {
    let ov = Overrides {
        world: Some(world),
        nodes: Some(nodes),
        ..Overrides::default()
    };
    convert(Tool::Osu, run, op, "osu.txt", &ov, cmd()).expect("converts")
}

fn import(c: &Converted) -> &ImportInfo {
    c.meta.import.as_ref().expect("meta.import is set")
}

/// The time statistics an imported point does not have.
fn assert_only_a_mean(r: &PointRecord) {
    for (name, x) in [
        ("median", r.time_us_median),
        ("min", r.time_us_min),
        ("p95", r.time_us_p95),
        ("p99", r.time_us_p99),
        ("max", r.time_us_max),
        ("stddev", r.time_us_stddev),
        ("cv", r.time_cv),
        ("mad", r.time_us_mad),
        ("skew", r.skew_us_median),
    ] {
        assert!(x.is_nan(), "{name} = {x}");
    }
    assert!(r.time_us_mean > 0.0);
    assert_eq!(r.slowest_rank, 0);
    assert_eq!(r.nccl_estimate_us, None);
    assert_eq!(r.busbw_gbps_mean, r.busbw_gbps);
}

#[test]
fn all_reduce_2_18_as_points() {
    let run = nccl_run(AR_218, 0);
    let c = nccl(&run, Op::AllReduce, &Overrides::default()).unwrap();
    assert_eq!(c.op, Op::AllReduce);
    assert_eq!(c.warnings, Vec::<String>::new());
    // 8 rows, each an out-of-place and an in-place point.
    assert_eq!(c.records.len(), 16);
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
            assert_only_a_mean(rec);
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
    assert_eq!(i.test, "all_reduce_perf_mpi");
    assert_eq!(i.source, "logs/x.log");
    assert_eq!(i.lines, [11, 29]);
    assert!(!i.per_iteration_samples);
    assert_eq!(i.algo_from, "unknown");
    assert_eq!(i.settings, run.header);
    assert!(i.checked);
    assert_eq!(i.max_error, None);
    assert_eq!(i.bandwidth_mismatches, 0);
    assert!(!i.truncated);
    assert_eq!(i.notes, Vec::<String>::new());
    assert!(i.time_statistic.contains("average"), "{}", i.time_statistic);
}

#[test]
fn algo_and_proto_flags_override() {
    let run = nccl_run(AR_218, 0);
    let ov = Overrides {
        algo: Some(Algo::Ring),
        proto: Some(Proto::Simple),
        ..Overrides::default()
    };
    let c = nccl(&run, Op::AllReduce, &ov).unwrap();
    assert_eq!(c.records.len(), 16);
    for r in &c.records {
        assert_eq!((r.key.algo, r.key.proto), (Algo::Ring, Some(Proto::Simple)));
    }
    assert_eq!(import(&c).algo_from, "flag");

    let ov = Overrides {
        proto: Some(Proto::Ll128),
        ..Overrides::default()
    };
    let c = nccl(&run, Op::AllReduce, &ov).unwrap();
    for r in &c.records {
        assert_eq!((r.key.algo, r.key.proto), (Algo::Auto, Some(Proto::Ll128)));
    }
    assert_eq!(import(&c).algo_from, "flag");
}

#[test]
fn algo_and_proto_forced_by_environment_come_from_the_log() {
    // NCCL's INFO lines as rank 0 prints them before the header.
    let text = AR_218.replacen(
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
    for r in &c.records {
        assert_eq!((r.key.algo, r.key.proto), (Algo::Tree, Some(Proto::Ll)));
    }
    assert_eq!(import(&c).algo_from, "log");
    // A flag beats the log.
    let ov = Overrides {
        algo: Some(Algo::Ring),
        ..Overrides::default()
    };
    let c = nccl(&run, Op::AllReduce, &ov).unwrap();
    assert_eq!(
        (c.records[0].key.algo, c.records[0].key.proto),
        (Algo::Ring, Some(Proto::Ll))
    );
    assert_eq!(import(&c).algo_from, "flag");
}

#[test]
fn old_error_column_is_judged_by_the_tolerance() {
    let run = nccl_run(OLD_V100, 0);
    let c = nccl(&run, Op::AllReduce, &Overrides::default()).unwrap();
    assert_eq!(c.records.len(), 50);
    assert_eq!(c.warnings, Vec::<String>::new());
    let first = &c.records[0];
    assert_eq!(
        (
            first.key.bytes,
            first.key.count,
            first.key.world,
            first.key.nodes,
            first.key.in_place
        ),
        (8, 2, 8, 1, false)
    );
    assert_eq!(first.time_us_mean, 48.46);
    assert_eq!((first.iters, first.warmup), (20, 5));
    let last = &c.records[49];
    assert_eq!((last.key.bytes, last.key.in_place), (134217728, true));
    assert_eq!(last.time_us_mean, 1821.9);
    let algbw = 134217728.0 / (1821.9 * 1e3);
    assert_eq!(last.algbw_gbps, algbw);
    // 8 ranks: 2(n-1)/n = 1.75.
    assert_eq!(last.busbw_gbps, algbw * 1.75);
    assert_eq!(last.wrong, 0);
    assert!(c.records.iter().all(|r| r.key.proto == Some(Proto::Auto)));

    // Errors of at most 2e-07 are within nccl-tests' float tolerance (1e-5): nothing wrong.
    assert!(c.records.iter().all(|r| r.wrong == 0));
    let i = import(&c);
    assert!(i.checked);
    assert_eq!(i.max_error, Some(2e-7));
    assert_eq!(i.bandwidth_mismatches, 0);
    assert_eq!(i.tool_version, None);
    // No test named in the log: the op's name.
    assert_eq!(i.test, "allreduce");
    assert_eq!(i.lines, [1, 42]);
    assert_eq!(i.root, None);
    assert_eq!(c.meta.library, None);
    assert_eq!(c.meta.hosts, vec!["9a417caaf03b".to_string()]);
    assert_eq!(c.meta.gpus, vec!["Tesla V100-SXM2-16GB".to_string(); 8]);
}

#[test]
fn not_available_wrong_counts_mean_unchecked() {
    // The 4 MiB row of the 2.18 log, as `-c 0` prints it: `N/A` in both #wrong columns.
    let line = AR_218.lines().nth(21).unwrap();
    assert!(line.contains("4374.00"), "{line}");
    let unchecked = line.replacen("       0  ", "     N/A  ", 1);
    let unchecked = unchecked.trim_end_matches('0').to_string() + "N/A";
    let text = AR_218.replacen(line, &unchecked, 1);
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

#[test]
fn old_all_gather_zero_rows_skipped_and_its_algbw_convention_reported() {
    let run = nccl_run(AG_2019, 0);
    let c = nccl(&run, Op::AllGather, &Overrides::default()).unwrap();
    // 31 rows, three of 0 B: 28 x 2 points.
    assert_eq!(c.records.len(), 56);
    let first = &c.records[0];
    // 48 B = 12 floats in all (the log's count, 1, is per rank).
    assert_eq!(
        (
            first.key.bytes,
            first.key.count,
            first.key.dtype,
            first.key.redop,
            first.key.world
        ),
        (48, 12, DType::F32, ReduceOp::Sum, 12)
    );
    assert_eq!(first.time_us_mean, 57.46);
    let last = &c.records[55];
    assert_eq!(
        (last.key.bytes, last.key.count, last.key.in_place),
        (8589934560, 2147483640, true)
    );
    assert_eq!(last.time_us_mean, 70089.0);
    let algbw = 8589934560.0 / (70089.0 * 1e3);
    assert_eq!(last.algbw_gbps, algbw);
    assert_eq!(last.busbw_gbps, algbw * (11.0 / 12.0));

    let skipped: Vec<&str> = c
        .warnings
        .iter()
        .filter(|w| w.contains("skipped"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        skipped,
        vec![
            "line 20: skipped: 0 B: nothing was moved",
            "line 20: skipped: 0 B: nothing was moved",
            "line 21: skipped: 0 B: nothing was moved",
            "line 21: skipped: 0 B: nothing was moved",
            "line 22: skipped: 0 B: nothing was moved",
            "line 22: skipped: 0 B: nothing was moved",
        ]
    );
    let i = import(&c);
    // This release printed algbw as per-rank bytes x (n-1) / time: from 2016 B on, the printed
    // value is 11/12 of bytes/time, outside the rounding (one half at lines 28 and 29, both
    // halves of lines 30 to 50).
    assert_eq!(i.bandwidth_mismatches, 44);
    assert_eq!(c.warnings.len(), 6 + 44);
    let mismatched: Vec<usize> = c
        .warnings
        .iter()
        .filter(|w| !w.contains("skipped"))
        .map(|w| {
            w.strip_prefix("line ")
                .and_then(|w| w.split(':').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{w}"))
        })
        .collect();
    let mut expected = vec![28, 29];
    expected.extend((30..=50).flat_map(|l| [l, l]));
    assert_eq!(mismatched, expected);
    assert!(
        c.warnings[6].starts_with("line 28: algbw printed 0.03 GB/s"),
        "{}",
        c.warnings[6]
    );
    // The largest row: 8589934560 B in 106773 us is 80.45 GB/s, printed 73.75 (= x 11/12).
    assert!(c.warnings[48].starts_with("line 50: algbw printed 73.75 GB/s"));
    // The error column checks: `1e+00` (rows of 4294967280 and 8589934560 B) is beyond the
    // float tolerance, so at least one element was wrong; `0e+00` means none.
    assert!(i.checked);
    assert_eq!(i.max_error, Some(1.0));
    let wrong: Vec<(usize, bool, u64)> = c
        .records
        .iter()
        .filter(|r| r.wrong != 0)
        .map(|r| (r.key.bytes, r.key.in_place, r.wrong))
        .collect();
    assert_eq!(
        wrong,
        vec![
            (4294967280, false, 1),
            (4294967280, true, 1),
            (8589934560, false, 1),
            (8589934560, true, 1)
        ]
    );
    // The notes hold the 6 skips and the first 20 mismatches.
    assert_eq!(i.notes.len(), 26);
    assert_eq!(i.notes[0], "line 20: skipped: 0 B: nothing was moved");
    assert_eq!(i.notes[6], c.warnings[6]);
    assert_eq!(i.notes[25], c.warnings[25]);
}

#[test]
fn new_all_gather_counts_all_elements_and_agrees_with_its_bandwidths() {
    let run = nccl_run(MULTI_2178, 1);
    assert_eq!(run.test.as_deref(), Some("all_gather_perf"));
    let c = nccl(&run, Op::AllGather, &Overrides::default()).unwrap();
    assert_eq!(c.records.len(), 20);
    let r = &c.records[0];
    // 33554432 B of doubles: 4194304 in all (the log prints 524288 per rank).
    assert_eq!(
        (r.key.bytes, r.key.count, r.key.dtype),
        (33554432, 4194304, DType::F64)
    );
    assert_eq!(r.time_us_mean, 123.44);
    let algbw = 33554432.0 / (123.44 * 1e3);
    assert_eq!(r.busbw_gbps, algbw * (7.0 / 8.0));
    let i = import(&c);
    assert_eq!(i.bandwidth_mismatches, 0);
    assert!(i.checked);
    assert_eq!(i.lines, [38, 66]);
    assert_eq!(c.warnings, Vec::<String>::new());
}

#[test]
fn rooted_broadcast_records_its_root() {
    let run = nccl_run(BCAST_2019, 0);
    let c = nccl(&run, Op::Broadcast, &Overrides::default()).unwrap();
    assert_eq!(c.records.len(), 62);
    let i = import(&c);
    assert_eq!(i.root, Some(0));
    assert_eq!(i.bandwidth_mismatches, 0);
    assert_eq!(i.max_error, Some(0.0));
    assert!(i.checked);
    assert!(c.records.iter().all(|r| r.wrong == 0));
    // Broadcast's busbw factor is 1.
    let last = c.records.last().unwrap();
    assert_eq!(last.time_us_mean, 70368.0);
    assert_eq!(last.busbw_gbps, last.algbw_gbps);
    assert_eq!(last.algbw_gbps, 8589934592.0 / (70368.0 * 1e3));
    // No reduction: recorded as sum.
    assert!(c.records.iter().all(|r| r.key.redop == ReduceOp::Sum));
}

#[test]
fn zero_byte_rows_are_skipped_with_a_warning() {
    let run = nccl_run(T4, 0);
    let c = nccl(&run, Op::AllReduce, &Overrides::default()).unwrap();
    assert_eq!(
        c.warnings,
        vec![
            "line 58: skipped: 0 B: nothing was moved",
            "line 58: skipped: 0 B: nothing was moved",
            "line 59: skipped: 0 B: nothing was moved",
            "line 59: skipped: 0 B: nothing was moved",
        ]
    );
    // 31 rows less two.
    assert_eq!(c.records.len(), 58);
    let first = &c.records[0];
    assert_eq!((first.key.bytes, first.key.count), (4, 1));
    assert_eq!(first.time_us_mean, 65.70);
    assert_eq!((first.iters, first.warmup), (100, 5));
    // Two hosts, one rank each.
    assert_eq!((first.key.world, first.key.nodes), (2, 2));
    assert_eq!(c.meta.nodes, 2);
    assert_eq!(
        c.meta.hosts,
        vec![
            "test-nccl-efa-worker-0".to_string(),
            "test-nccl-efa-worker-1".to_string()
        ]
    );
    assert_eq!(c.meta.rank_nodes, vec![0, 1]);
    assert_eq!(c.meta.host.hostname, "test-nccl-efa-worker-0");
    assert_eq!(c.meta.library.as_deref(), Some("NCCL 2.12.7"));
    let i = import(&c);
    assert!(i.checked);
    assert_eq!(i.bandwidth_mismatches, 0);
    assert_eq!(i.lines, [3, 92]);
    assert_eq!(i.notes.len(), 5);
    assert!(
        i.notes[0].starts_with("47 line(s) inside the run were not the benchmark's"),
        "{}",
        i.notes[0]
    );
    assert_eq!(i.notes[1], "line 58: skipped: 0 B: nothing was moved");
}

#[test]
fn ten_nodes_from_the_rank_list() {
    let run = nccl_run(TEN_NODE, 0);
    let c = nccl(&run, Op::AllReduce, &Overrides::default()).unwrap();
    assert_eq!(c.records.len(), 20);
    let r = &c.records[19];
    assert_eq!(
        (r.key.world, r.key.nodes, r.key.dtype),
        (80, 10, DType::F64)
    );
    assert_eq!((r.key.bytes, r.key.count), (17179869184, 2147483648));
    assert_eq!(r.time_us_mean, 105146.0);
    let algbw = 17179869184.0 / (105146.0 * 1e3);
    assert_eq!(r.algbw_gbps, algbw);
    assert_eq!(r.busbw_gbps, algbw * (2.0 * 79.0 / 80.0));
    assert_eq!(
        c.meta.rank_nodes,
        (0..80).map(|i| i / 8).collect::<Vec<_>>()
    );
    assert_eq!(c.meta.hosts.len(), 10);
    assert_eq!(c.meta.hosts[9], "cnode3-011");
    assert_eq!(import(&c).bandwidth_mismatches, 0);
}

#[test]
fn world_flag_must_agree_with_the_rank_list() {
    let run = nccl_run(AR_218, 0);
    let ov = Overrides {
        world: Some(4),
        ..Overrides::default()
    };
    let e = nccl(&run, Op::AllReduce, &ov).unwrap_err();
    assert_eq!(e, "the log lists 2 ranks but --world is 4");
    let ov = Overrides {
        world: Some(2),
        ..Overrides::default()
    };
    let c = nccl(&run, Op::AllReduce, &ov).unwrap();
    assert_eq!(c.records[0].key.world, 2);
    // A log without a rank list needs --world.
    let e = convert(
        Tool::Osu,
        &osu_run(OSU_AR_FLOAT),
        Op::AllReduce,
        "osu.txt",
        &Overrides::default(),
        cmd(),
    )
    .unwrap_err();
    assert!(e.contains("--world"), "{e}");
}

#[test]
fn osu_char_data_as_f32_with_a_note_and_small_rows_skipped() {
    let run = osu_run(OSU_AR_CHAR);
    let c = osu_convert(&run, Op::AllReduce, 2, 2);
    assert_eq!(
        c.warnings,
        vec![
            "line 5: skipped: 1 B is not a whole number of f32 elements",
            "line 6: skipped: 2 B is not a whole number of f32 elements",
        ]
    );
    // 21 sizes, 1 B to 1 MiB, less two.
    assert_eq!(c.records.len(), 19);
    let first = &c.records[0];
    assert_eq!(
        first.key,
        PointKey {
            backend: "mpi".into(),
            op: Op::AllReduce,
            algo: Algo::Auto,
            dtype: DType::F32,
            redop: ReduceOp::Sum,
            world: 2,
            nodes: 2,
            bytes: 4,
            count: 1,
            in_place: false,
            proto: None,
        }
    );
    assert_eq!(first.time_us_mean, 58.54);
    assert_eq!(first.algbw_gbps, 4.0 / (58.54 * 1e3));
    assert_eq!(first.busbw_gbps, first.algbw_gbps);
    assert_eq!((first.iters, first.warmup), (0, 0));
    assert_only_a_mean(first);
    let last = &c.records[18];
    assert_eq!((last.key.bytes, last.key.count), (1048576, 262144));
    assert_eq!(last.time_us_mean, 662.73);
    assert!(c.records.iter().all(|r| !r.key.in_place));

    let i = import(&c);
    assert_eq!(i.tool, "osu");
    assert_eq!(i.tool_version.as_deref(), Some("7.4"));
    assert_eq!(i.test, "Allreduce");
    assert_eq!(i.lines, [2, 25]);
    assert!(!i.checked);
    assert_eq!(i.bandwidth_mismatches, 0);
    let char_notes: Vec<&String> = i.notes.iter().filter(|n| n.contains("MPI_CHAR")).collect();
    assert_eq!(char_notes.len(), 1, "{:?}", i.notes);
    assert!(char_notes[0].contains("f32"), "{}", char_notes[0]);
    assert_eq!(i.notes.len(), 3, "{:?}", i.notes);
    assert_eq!(c.meta.backend, "mpi");
    assert_eq!(c.meta.hosts, vec!["unknown".to_string()]);
    assert_eq!(c.meta.rank_nodes, vec![0, 0]);
    assert_eq!(c.meta.host.hostname, "unknown");
    assert!(c.meta.gpus.is_empty());
}

#[test]
fn osu_char_note_reads_as_one_sentence() {
    let c = osu_convert(&osu_run(OSU_AR_CHAR), Op::AllReduce, 2, 2);
    let note = import(&c)
        .notes
        .iter()
        .find(|n| n.contains("MPI_CHAR"))
        .unwrap();
    assert!(!note.contains("  "), "{note:?}");
}

#[test]
fn osu_float_data_needs_no_note() {
    let c = osu_convert(&osu_run(OSU_AR_FLOAT), Op::AllReduce, 64, 2);
    assert_eq!(c.warnings, Vec::<String>::new());
    assert_eq!(c.records.len(), 19);
    assert_eq!(import(&c).notes, Vec::<String>::new());
    let r = &c.records[0];
    assert_eq!((r.key.bytes, r.key.count, r.key.nodes), (4, 1, 2));
    assert_eq!(r.busbw_gbps, r.algbw_gbps * (2.0 * 63.0 / 64.0));
}

#[test]
fn osu_allgather_size_is_per_rank() {
    let run = osu_run(OSU_AG);
    let c = osu_convert(&run, Op::AllGather, 64, 2);
    // 1 B from each of 64 ranks is 64 B in all: 16 f32, so no row is skipped.
    assert_eq!(c.warnings, Vec::<String>::new());
    assert_eq!(c.records.len(), 21);
    let first = &c.records[0];
    assert_eq!((first.key.bytes, first.key.count), (64, 16));
    assert_eq!(first.time_us_mean, 18.19);
    let algbw = 64.0 / (18.19 * 1e3);
    assert_eq!(first.algbw_gbps, algbw);
    assert_eq!(first.busbw_gbps, algbw * (63.0 / 64.0));
    let last = &c.records[20];
    assert_eq!((last.key.bytes, last.key.count), (67108864, 16777216));
    assert_eq!(last.time_us_mean, 196016.56);
}

#[test]
fn osu_full_rows_give_their_iterations() {
    let run = osu_run(OSU_REDUCE_FULL);
    let c = osu_convert(&run, Op::Reduce, 192, 2);
    assert_eq!(c.warnings.len(), 2);
    assert_eq!(c.records.len(), 9);
    let r = &c.records[0];
    assert_eq!((r.key.bytes, r.key.world, r.iters), (4, 192, 1000));
    // The average, not the min or max rank's.
    assert_eq!(r.time_us_mean, 52.65);
    assert_eq!(r.busbw_gbps, r.algbw_gbps);
    assert_eq!(c.records[8].key.bytes, 1024);
    assert_eq!(import(&c).test, "Reduce");
}

#[test]
fn unknown_element_type_is_skipped_by_name() {
    let text = AR_218.replace("     float     sum", "      int8     sum");
    let run = nccl_run(&text, 0);
    let c = nccl(&run, Op::AllReduce, &Overrides::default()).unwrap();
    assert!(c.records.is_empty());
    assert_eq!(c.warnings.len(), 8);
    assert!(
        c.warnings[0].starts_with("line 20: skipped: element type 'int8'"),
        "{}",
        c.warnings[0]
    );
}
