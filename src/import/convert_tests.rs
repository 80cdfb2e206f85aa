//! Converting runs parsed from the real logs in tests/data/import into collbench points and
//! metadata: every expected value is the log's own number or follows from it by the formula
//! named next to it.
//!
//! What every conversion gives (its points' count, first and last point, bandwidths and
//! checks) stands in the table `CONVERSIONS`, walked by one test; the modules check what is
//! particular to nccl-tests logs and to OSU files.

use super::*;
use crate::import::{nccl_text, osu};

#[path = "convert_tests/nccl.rs"]
mod nccl;
#[path = "convert_tests/osu.rs"]
mod osu_files;

/// A log: its file name (for failure messages) and its text.
#[derive(Clone, Copy)]
struct Log {
    file: &'static str,
    text: &'static str,
}

macro_rules! nccl_log {
    ($file:literal) => {
        Log {
            file: $file,
            text: include_str!(concat!("../../tests/data/import/nccl-tests/", $file)),
        }
    };
}
macro_rules! osu_file {
    ($file:literal) => {
        Log {
            file: $file,
            text: include_str!(concat!("../../tests/data/import/osu/", $file)),
        }
    };
}

const AR_218: Log = nccl_log!("all_reduce_v2.18.0_tagged_stderr_versionheader.log");
const OLD_V100: Log = nccl_log!("all_reduce_old_noroot_g8_v100_errorfloat.log");
const AG_2019: Log = nccl_log!("all_gather_2019_g12_noredop_column.log");
const BCAST_2019: Log = nccl_log!("broadcast_2019_g12_root_noredop.log");
const T4: Log = nccl_log!("all_reduce_2node_2gpu_t4_tagged_ncclinfo_root.log");
const MULTI_2178: Log =
    nccl_log!("multi_coll_v2.17.8_1node_8proc_h100_allreduce_allgather_rs_alltoall_sendrecv.log");
const TEN_NODE: Log = nccl_log!("all_reduce_v2.17.8_10node_80rank_h100.log");
const OSU_AR_CHAR: Log = osu_file!("osu_allreduce_v7.4_default_2node_char.txt");
const OSU_AG: Log = osu_file!("osu_allgather_v5.6.2_default_64rank_2node_impi.txt");
const OSU_AR_FLOAT: Log = osu_file!("osu_allreduce_v5.6.2_default_64rank_2node_impi.txt");
const OSU_REDUCE_FULL: Log = osu_file!("osu_reduce_cuda_v7.3_full_192rank_excerpt.txt");

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

/// `run` of a nccl-tests log as `op`, without flags.
fn nccl_points(log: Log, run: usize, op: Op) -> (LogRun, Converted) {
    let run = nccl_run(log.text, run);
    match nccl(&run, op, &Overrides::default()) {
        Ok(c) => (run, c),
        Err(e) => panic!("{}: {e}", log.file),
    }
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

/// Where a conversion's run comes from.
#[derive(Clone, Copy)]
enum Input {
    /// Run `.1` of a nccl-tests log.
    Nccl(Log, usize),
    /// An OSU file, with the `--world` and `--nodes` it needs.
    Osu(Log, usize, usize),
}

/// (bytes, count, in place, mean time) of a point.
type P = (usize, usize, bool, f64);

/// A run and the points it converts to.
struct Conversion {
    input: Input,
    op: Op,
    records: usize,
    warnings: usize,
    dtype: DType,
    first: P,
    last: P,
    /// busbw / algbw: nccl-tests' factor for the op and world size.
    factor: f64,
    test: &'static str,
    lines: [usize; 2],
    checked: bool,
    max_error: Option<f64>,
    mismatches: usize,
}

#[rustfmt::skip]
const CONVERSIONS: &[Conversion] = &[
    // 8 rows, each an out-of-place and an in-place point; 2 ranks: 2(n-1)/n is 1.
    Conversion {
        input: Input::Nccl(AR_218, 0), op: Op::AllReduce, records: 16, warnings: 0,
        dtype: DType::F32,
        first: (1048576, 262144, false, 4366.46), last: (134217728, 33554432, true, 58055.4),
        factor: 1.0, test: "all_reduce_perf_mpi", lines: [11, 29],
        checked: true, max_error: None, mismatches: 0,
    },
    // No test named in the log: the op's name. 8 ranks: 2(n-1)/n = 1.75. Errors of at most
    // 2e-07 are within nccl-tests' float tolerance (1e-5).
    Conversion {
        input: Input::Nccl(OLD_V100, 0), op: Op::AllReduce, records: 50, warnings: 0,
        dtype: DType::F32,
        first: (8, 2, false, 48.46), last: (134217728, 33554432, true, 1821.9),
        factor: 1.75, test: "allreduce", lines: [1, 42],
        checked: true, max_error: Some(2e-7), mismatches: 0,
    },
    // 31 rows, three of 0 B: 28 x 2 points; 48 B = 12 floats in all (the log's count, 1, is
    // per rank). Warnings: 3 skipped rows (each said once for both halves) and 44 bandwidth
    // mismatches.
    Conversion {
        input: Input::Nccl(AG_2019, 0), op: Op::AllGather, records: 56, warnings: 3 + 44,
        dtype: DType::F32,
        first: (48, 12, false, 57.46), last: (8589934560, 2147483640, true, 70089.0),
        factor: 11.0 / 12.0, test: "allgather", lines: [1, 52],
        checked: true, max_error: Some(1.0), mismatches: 44,
    },
    // 33554432 B of doubles: 4194304 in all (the log prints 524288 per rank).
    Conversion {
        input: Input::Nccl(MULTI_2178, 1), op: Op::AllGather, records: 20, warnings: 0,
        dtype: DType::F64,
        first: (33554432, 4194304, false, 123.44), last: (17179869184, 2147483648, true, 41068.7),
        factor: 7.0 / 8.0, test: "all_gather_perf", lines: [38, 66],
        checked: true, max_error: None, mismatches: 0,
    },
    // Broadcast's busbw factor is 1.
    Conversion {
        input: Input::Nccl(BCAST_2019, 0), op: Op::Broadcast, records: 62, warnings: 0,
        dtype: DType::F32,
        first: (8, 2, false, 59.75), last: (8589934592, 2147483648, true, 70368.0),
        factor: 1.0, test: "broadcast", lines: [1, 52],
        checked: true, max_error: Some(0.0), mismatches: 0,
    },
    // 31 rows less two of 0 B (each skip said once for both halves).
    Conversion {
        input: Input::Nccl(T4, 0), op: Op::AllReduce, records: 58, warnings: 2,
        dtype: DType::F32,
        first: (4, 1, false, 65.70), last: (1073741824, 268435456, true, 344454.0),
        factor: 1.0, test: "allreduce", lines: [3, 92],
        checked: true, max_error: None, mismatches: 0,
    },
    Conversion {
        input: Input::Nccl(TEN_NODE, 0), op: Op::AllReduce, records: 20, warnings: 0,
        dtype: DType::F64,
        first: (33554432, 4194304, false, 798.52), last: (17179869184, 2147483648, true, 105146.0),
        factor: 2.0 * 79.0 / 80.0, test: "all_reduce_perf", lines: [3, 103],
        checked: true, max_error: None, mismatches: 0,
    },
    // 21 sizes, 1 B to 1 MiB, less two of 1 and 2 B: not whole f32 elements.
    Conversion {
        input: Input::Osu(OSU_AR_CHAR, 2, 2), op: Op::AllReduce, records: 21, warnings: 0,
        dtype: DType::I8,
        first: (1, 1, false, 28.46), last: (1048576, 1048576, false, 662.73),
        factor: 1.0, test: "Allreduce", lines: [2, 25],
        checked: false, max_error: None, mismatches: 0,
    },
    Conversion {
        input: Input::Osu(OSU_AR_FLOAT, 64, 2), op: Op::AllReduce, records: 19, warnings: 0,
        dtype: DType::F32,
        first: (4, 1, false, 3.90), last: (1048576, 262144, false, 7403.33),
        factor: 2.0 * 63.0 / 64.0, test: "Allreduce", lines: [2, 22],
        checked: false, max_error: None, mismatches: 0,
    },
    // 1 B from each of 64 ranks is 64 B in all: 16 f32, so no row is skipped.
    Conversion {
        input: Input::Osu(OSU_AG, 64, 2), op: Op::AllGather, records: 21, warnings: 0,
        dtype: DType::I8,
        first: (64, 64, false, 18.19), last: (67108864, 67108864, false, 196016.56),
        factor: 63.0 / 64.0, test: "Allgather", lines: [2, 24],
        checked: false, max_error: None, mismatches: 0,
    },
    // The average, not the min or max rank's.
    Conversion {
        input: Input::Osu(OSU_REDUCE_FULL, 192, 2), op: Op::Reduce, records: 11, warnings: 0,
        dtype: DType::I8,
        first: (1, 1, false, 53.34), last: (1024, 1024, false, 55.48),
        factor: 1.0, test: "Reduce", lines: [3, 16],
        checked: false, max_error: None, mismatches: 0,
    },
];

#[test]
fn every_log_converts_to_points_of_its_own_numbers() {
    for want in CONVERSIONS {
        let (file, c) = match want.input {
            Input::Nccl(log, i) => (log.file, nccl_points(log, i, want.op).1),
            Input::Osu(log, world, nodes) => {
                let c = osu_convert(&osu_run(log.text), want.op, world, nodes);
                (log.file, c)
            }
        };
        assert_eq!(c.op, want.op, "{file}");
        let counts = (c.records.len(), c.warnings.len());
        assert_eq!(
            counts,
            (want.records, want.warnings),
            "{file}: records, warnings"
        );
        let point = |r: &PointRecord| (r.key.bytes, r.key.count, r.key.in_place, r.time_us_mean);
        let (first, last) = (&c.records[0], c.records.last().unwrap());
        assert_eq!(
            (point(first), point(last)),
            (want.first, want.last),
            "{file}"
        );
        for r in [first, last] {
            // algbw: bytes / time; busbw: algbw x the op's factor.
            let algbw = r.key.bytes as f64 / (r.time_us_mean * 1e3);
            assert_eq!(r.algbw_gbps, algbw, "{file}: {} B", r.key.bytes);
            assert_eq!(
                r.busbw_gbps,
                algbw * want.factor,
                "{file}: {} B",
                r.key.bytes
            );
        }
        for r in &c.records {
            assert_eq!(r.key.dtype, want.dtype, "{file}: {} B", r.key.bytes);
            assert_only_a_mean(r);
        }
        let i = import(&c);
        assert_eq!(
            (i.test.as_str(), i.lines, i.checked),
            (want.test, want.lines, want.checked),
            "{file}: test, lines, checked"
        );
        assert_eq!(i.max_error, want.max_error, "{file}");
        assert_eq!(i.bandwidth_mismatches, want.mismatches, "{file}");
    }
}
