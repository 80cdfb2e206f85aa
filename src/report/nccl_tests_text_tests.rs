//! nccl-tests' text, character for character, against lines of real nccl-tests logs
//! (tests/data/import/nccl-tests) and C's printf rules.

use super::*;
use crate::collective::{Op, ReduceOp};

#[test]
fn float_str_falls_back_as_get_float_str_does() {
    assert_eq!(float_str(798.52, 7), " 798.52");
    assert_eq!(float_str(12586.1, 7), "12586.1");
    assert_eq!(float_str(105854.0, 7), " 105854");
    // all_reduce_v2.17.8's last sendrecv row prints 1.6e+07 for 16 seconds.
    assert_eq!(float_str(1.6e7, 7), "1.6e+07");
    assert_eq!(float_str(42.02, 6), " 42.02");
    assert_eq!(float_str(344.87, 6), "344.87");
    assert_eq!(float_str(1234.5, 6), "1234.5");
    assert_eq!(float_str(1.0e6, 6), " 1e+06");
    assert_eq!(float_str(0.0, 6), "  0.00");
}

#[test]
fn c_g_is_printf_percent_g() {
    assert_eq!(c_g(265.631), "265.631");
    assert_eq!(c_g(265.63149), "265.631");
    assert_eq!(c_g(216.683), "216.683");
    assert_eq!(c_g(1.15327), "1.15327");
    assert_eq!(c_g(0.0), "0");
    assert_eq!(c_g(12.0), "12");
    assert_eq!(c_g(0.000123456), "0.000123456");
    assert_eq!(c_g(0.0000123456), "1.23456e-05");
    assert_eq!(c_g(1234567.0), "1.23457e+06");
    assert_eq!(c_g(999999.4), "999999");
    assert_eq!(c_g(999999.6), "1e+06");
}

/// A point of `op` as the 80-rank log's first AllReduce row (`33554432  4194304  double  sum  -1
/// 798.52  42.02  82.99  0`).
fn point(op: Op, bytes: usize, count: usize, loop_us: f64) -> PointRecord {
    let mut rec = PointRecord::example(op, bytes, 80);
    rec.key.dtype = DType::F64;
    rec.key.count = count;
    rec.key.redop = ReduceOp::Sum;
    rec.loop_time_us = Some(loop_us);
    rec.wrong = 0;
    rec
}

#[test]
fn a_row_is_the_logs_row() {
    // all_reduce_v2.17.8_10node_80rank_h100.log, first row's out-of-place half.
    let ar = point(Op::AllReduce, 33554432, 4194304, 798.52);
    assert_eq!(
        format!("{}{}", preamble(&ar), body(&ar)),
        "    33554432       4194304    double     sum      -1   798.52   42.02   82.99       0"
    );
    // all_gather_reduce_scatter_v2.17.8_10node_80rank_h100.log: the count is per rank, the
    // redop `none` (its algbw, 49.19, came from the unrounded time: 682.20 gives 49.18).
    let ag = point(Op::AllGather, 33553920, 52428 * 80, 682.20);
    assert_eq!(
        format!("{}{}", preamble(&ag), &body(&ag)[..9]),
        "    33553920         52428    double    none      -1   682.20"
    );
    let mut rooted = point(Op::Broadcast, 8, 2, 10.0);
    rooted.key.root = Some(3);
    rooted.key.dtype = DType::F32;
    assert!(preamble(&rooted).ends_with("     float    none       3"));
    let hc = point(Op::Hypercube, 1024, 128, 10.0);
    assert!(
        preamble(&hc).ends_with("    double              -1"),
        "{}",
        preamble(&hc)
    );
}

#[test]
fn header_and_footer_are_nccl_tests_lines() {
    let settings = Settings {
        min_bytes: 33554432,
        max_bytes: 68719476736,
        step: Step::Factor(2),
        warmup: 5,
        iters: 20,
        agg: 1,
        graph: false,
    };
    let dev = Device {
        rank: 0,
        pid: 2627782,
        host: "cnode3-002".into(),
        device: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
    };
    let lines = table_header("all_reduce_perf", &settings, &[dev]);
    assert_eq!(lines[0], "# Collective test starting: all_reduce_perf");
    assert_eq!(
        lines[1],
        "# nThread 1 nGpus 1 minBytes 33554432 maxBytes 68719476736 step: 2(factor) warmup iters: \
         5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0"
    );
    assert_eq!(
        lines[4],
        "#  Rank  0 Group  0 Pid 2627782 on cnode3-002 device  0 [0000:00:00] NVIDIA H100 80GB HBM3"
    );
    // The column header of every 2.17+ log, trailing spaces and all.
    assert_eq!(
        lines[6],
        "#                                                              out-of-place                       in-place          "
    );
    assert_eq!(
        lines[7],
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong "
    );
    assert_eq!(
        lines[8],
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         "
    );
    let foot = table_footer("all_reduce_perf", 0, 265.631);
    assert_eq!(foot[0], "# Out of bounds values : 0 OK");
    assert_eq!(foot[1], "# Avg bus bandwidth    : 265.631 ");
    assert_eq!(foot[3], "# Collective test concluded: all_reduce_perf");
}
