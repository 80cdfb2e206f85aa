//! Tests of the per-point summary.

use super::*;
use crate::collective::{Algo, DType, Op, ReduceOp};

fn key(op: Op, world: usize, bytes: usize) -> PointKey {
    PointKey {
        backend: "host".into(),
        op,
        algo: Algo::Ring,
        dtype: DType::F32,
        redop: ReduceOp::Sum,
        world,
        nodes: 1,
        bytes,
        count: bytes / 4,
        in_place: false,
        proto: None,
        root: None,
        comm: Default::default(),
        traffic: None,
        group: None,
        concurrent: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

/// Rank 0: 10 12 9 20; rank 1: 11 8 9.5 14. Iteration maxima 11 12 9.5 20 (slowest ranks
/// 1 0 1 0), minima 10 8 9 14, skews 1 4 0.5 6.
fn two_by_four() -> Vec<Vec<f64>> {
    vec![vec![10.0, 12.0, 9.0, 20.0], vec![11.0, 8.0, 9.5, 14.0]]
}

#[test]
fn two_ranks_four_iterations_hand_computed() {
    let (rec, samples, ranks) =
        summarize(key(Op::AllGather, 2, 23_000), 3, &two_by_four(), &[0, 3]).unwrap();
    let slowest: Vec<_> = samples
        .iter()
        .map(|s| (s.time_us, s.slowest_rank, s.fastest_us))
        .collect();
    assert_eq!(
        slowest,
        [
            (11.0, 1, 10.0),
            (12.0, 0, 8.0),
            (9.5, 1, 9.0),
            (20.0, 0, 14.0)
        ]
    );
    assert_eq!((rec.iters, rec.warmup, rec.wrong), (4, 3, 3));
    // Sorted iteration times 9.5 11 12 20.
    assert_eq!(
        (rec.time_us_min, rec.time_us_median, rec.time_us_max),
        (9.5, 11.5, 20.0)
    );
    assert_eq!(rec.time_us_mean, 13.125);
    // p95: h = 3 * 0.95 = 2.85 -> 12 + 0.85 * 8; p99: h = 2.97 -> 12 + 0.97 * 8.
    assert!(close(rec.time_us_p95, 18.8) && close(rec.time_us_p99, 19.76));
    // 23000 bytes in 11.5 us = 2 GB/s; AllGather over 2 ranks has busbw factor 1/2.
    assert!(close(rec.algbw_gbps, 2.0) && close(rec.busbw_gbps, 1.0));
    assert!(close(rec.busbw_gbps_mean, 23_000.0 / 13_125.0 * 0.5));
    // Each rank slowest twice: the tie goes to rank 0. Skews sorted 0.5 1 4 6: median 2.5.
    assert_eq!((rec.slowest_rank, rec.skew_us_median), (0, 2.5));
    let want = Summary::of(&[11.0, 12.0, 9.5, 20.0]).unwrap();
    assert_eq!(
        (rec.time_us_stddev, rec.time_cv, rec.time_us_mad),
        (want.stddev, want.cv, want.mad)
    );
    // Rank 0 sorted 9 10 12 20; rank 1 sorted 8 9.5 11 14.
    let r0 = RankSummary {
        rank: 0,
        global_rank: 0,
        node: 0,
        time_us_median: 11.0,
        time_us_mean: 12.75,
        time_us_max: 20.0,
        wrong: 0,
    };
    let r1 = RankSummary {
        rank: 1,
        global_rank: 1,
        node: 0,
        time_us_median: 10.25,
        time_us_mean: 10.625,
        time_us_max: 14.0,
        wrong: 3,
    };
    assert_eq!(ranks, [r0, r1]);
    assert_eq!(rec.key, key(Op::AllGather, 2, 23_000));
}

#[test]
fn slowest_rank_is_most_often_slowest() {
    let times = vec![
        vec![1.0, 1.0, 5.0],
        vec![2.0, 2.0, 1.0],
        vec![2.0, 1.5, 1.0],
    ];
    let (rec, samples, _) = summarize(key(Op::AllReduce, 3, 8), 0, &times, &[0, 0, 0]).unwrap();
    // Iteration 0 ties between ranks 1 and 2 at 2.0: the lower rank is named.
    assert_eq!(
        samples.iter().map(|s| s.slowest_rank).collect::<Vec<_>>(),
        [1, 1, 0]
    );
    assert_eq!(rec.slowest_rank, 1);
    // AllReduce over 3 ranks: 8 bytes in 2 us = 0.004 GB/s, busbw x 4/3.
    assert!(close(rec.algbw_gbps, 0.004) && close(rec.busbw_gbps, 0.004 * 4.0 / 3.0));
}

#[test]
fn single_rank_single_iteration() {
    let (rec, samples, ranks) =
        summarize(key(Op::AllReduce, 1, 4000), 1, &[vec![2.0]], &[0]).unwrap();
    assert_eq!(
        samples,
        [IterSample {
            time_us: 2.0,
            slowest_rank: 0,
            fastest_us: 2.0
        }]
    );
    assert_eq!(
        (rec.time_us_median, rec.skew_us_median, rec.time_us_stddev),
        (2.0, 0.0, 0.0)
    );
    // busbw factor of a one-rank AllReduce is 0.
    assert!(close(rec.algbw_gbps, 2.0) && rec.busbw_gbps == 0.0);
    assert_eq!(ranks.len(), 1);
}

#[test]
fn zero_time_gives_zero_bandwidth() {
    let (rec, _, _) = summarize(
        key(Op::AllReduce, 2, 8),
        0,
        &[vec![0.0], vec![0.0]],
        &[0, 0],
    )
    .unwrap();
    assert_eq!(
        (rec.algbw_gbps, rec.busbw_gbps, rec.busbw_gbps_mean),
        (0.0, 0.0, 0.0)
    );
}

#[test]
fn rejects_empty_inconsistent_and_non_finite() {
    let k = || key(Op::AllReduce, 2, 8);
    assert!(summarize(k(), 0, &[], &[]).is_none());
    assert!(summarize(k(), 0, &[vec![], vec![]], &[0, 0]).is_none());
    assert!(summarize(k(), 0, &[vec![1.0], vec![1.0, 2.0]], &[0, 0]).is_none());
    assert!(summarize(k(), 0, &[vec![1.0], vec![1.0]], &[0]).is_none());
    assert!(summarize(k(), 0, &[vec![1.0], vec![f64::NAN]], &[0, 0]).is_none());
    assert!(summarize(k(), 0, &[vec![f64::INFINITY], vec![1.0]], &[0, 0]).is_none());
}

#[test]
fn wrong_counts_saturate() {
    let (rec, _, _) = summarize(
        key(Op::AllReduce, 2, 8),
        0,
        &[vec![1.0], vec![1.0]],
        &[u64::MAX, 5],
    )
    .unwrap();
    assert_eq!(rec.wrong, u64::MAX);
}

/// A 2-iteration AllReduce point of `world` ranks.
fn point_of(world: usize) -> Point {
    use crate::collective::Shape;
    use crate::model::call::Call;
    let call = Call {
        op: Op::AllReduce,
        algo: Algo::Ring,
        dtype: DType::F32,
        redop: ReduceOp::Sum,
        shape: Shape::new(Op::AllReduce, DType::F32, 1024, world),
        root: 0,
    };
    Point {
        call,
        world,
        nodes: 1,
        pair: None,
        in_place: false,
        requested: 1024,
        iters: 2,
        warmup: 1,
        timing: Default::default(),
        cycle: 0,
        traffic: None,
        split: None,
        compute: None,
    }
}

#[test]
fn a_group_of_the_first_ranks_spans_their_nodes_and_each_member_keeps_its_node() {
    let hosts: Vec<String> = ["a", "a", "b", "b"].map(String::from).to_vec();
    let topo = Topology::from_hosts(&hosts);
    let times = vec![vec![1.0, 2.0]; 3];
    let (rec, _, ranks) = summarize_first_ranks(
        key(Op::AllReduce, 3, 1024),
        &point_of(3),
        &topo,
        &times,
        &[0; 3],
    )
    .unwrap();
    assert_eq!(rec.key.nodes, 2);
    let nodes: Vec<usize> = ranks.iter().map(|r| r.node).collect();
    assert_eq!(nodes, [0, 0, 1]);
    let (two, _, _) = summarize_first_ranks(
        key(Op::AllReduce, 2, 1024),
        &point_of(2),
        &topo,
        &times[..2],
        &[0; 2],
    )
    .unwrap();
    assert_eq!(two.key.nodes, 1);
}

#[test]
fn invalid_samples_are_refused_naming_the_point() {
    let e = summarize_point(
        key(Op::AllReduce, 2, 1024),
        &point_of(2),
        &vec![vec![f64::NAN]; 2],
        &[0; 2],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("invalid samples from the ranks for") && e.contains("allreduce"),
        "{e}"
    );
}
