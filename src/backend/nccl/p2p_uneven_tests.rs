//! AllToAllV's grouped calls without a GPU: nccl-tests' order (for every peer a send, then a
//! receive, empty ones left out), and the lists run on host buffers giving outputs the shared
//! checker finds exact, while a misrouted list is caught.

use std::sync::Arc;

use super::tests::{checked, outputs_on_host};
use super::*;
use crate::check::count_wrong_uneven;
use crate::collective::traffic::{parse_bytes_matrix, Traffic};
use crate::collective::{uneven, Algo, DType, Op, ReduceOp};
use crate::model::call::Call;
use crate::model::plan::{Point, PointTraffic};

fn point(traffic: Traffic, dtype: DType, requested: usize, world: usize) -> Point {
    let shape = uneven::shape(&traffic, dtype, requested, world);
    Point {
        call: Call {
            op: Op::AllToAllV,
            algo: Algo::Auto,
            dtype,
            redop: ReduceOp::Sum,
            shape,
            root: 0,
        },
        world,
        nodes: 1,
        pair: None,
        in_place: false,
        requested,
        iters: 1,
        warmup: 0,
        timing: Default::default(),
        cycle: 0,
        traffic: Some(PointTraffic {
            label: "test".into(),
            traffic: Arc::new(traffic),
        }),
        split: None,
        compute: None,
    }
}

fn lists(p: &Point) -> Vec<Vec<Transfer>> {
    let el = p.call.dtype.size();
    (0..p.world)
        .map(|r| uneven_transfers(&p.rank_counts(r).unwrap(), el))
        .collect()
}

fn wrong(p: &Point, lists: &[Vec<Transfer>]) -> Vec<u64> {
    let outputs = outputs_on_host(p, lists);
    (0..p.world)
        .map(|r| {
            let counts = p.rank_counts(r).unwrap();
            count_wrong_uneven(&p.call, p.world, &counts, checked(p, r, &outputs[r]))
        })
        .collect()
}

#[test]
fn the_calls_follow_nccl_tests_order_and_leave_out_empty_ones() {
    // Rank 1 of nccl-tests' 3-rank example: sends 48, 96, 64 B; receives 192, 96, 144 B.
    let m = parse_bytes_matrix("100 200 150\n50 100 75\n300 150 200\n", 1.0).unwrap();
    let p = point(m, DType::F32, 1 << 20, 3);
    let got: Vec<(Dir, usize, usize, usize)> = (lists(&p)[1].iter())
        .map(|t| (t.dir, t.peer, t.offset, t.count))
        .collect();
    use Dir::{Recv, Send};
    let want = [
        (Send, 0, 0, 12),
        (Recv, 0, 0, 48),
        (Send, 1, 48, 24),
        (Recv, 1, 192, 24),
        (Send, 2, 144, 16),
        (Recv, 2, 288, 36),
    ];
    assert_eq!(got, want);
    let empty = parse_bytes_matrix("0 16\n0 0\n", 1.0).unwrap();
    let p = point(empty, DType::F32, 1 << 20, 2);
    let l = lists(&p);
    assert_eq!((l[0].len(), l[1].len()), (1, 1), "{l:?}");
}

#[test]
fn the_calls_deliver_exactly_what_the_checker_expects_and_misroutes_are_caught() {
    for n in 1..=5 {
        for t in [
            Traffic::Spread(0.0),
            Traffic::Spread(1.0),
            Traffic::Spread(0.3),
        ] {
            for dtype in [DType::F32, DType::BF16, DType::I8] {
                let p = point(t.clone(), dtype, 70_000, n);
                let good = lists(&p);
                assert!(wrong(&p, &good).iter().all(|&w| w == 0), "{t:?} n {n}");
                if n < 3 {
                    continue;
                }
                // Every send from the start of its input: each rank but 0 (whose blocks start
                // there) gets another rank's elements.
                let mut bad = good.clone();
                for t in bad.iter_mut().flatten().filter(|t| t.dir == Dir::Send) {
                    t.offset = 0;
                }
                let w = wrong(&p, &bad);
                assert!(w[1..].iter().all(|&w| w > 0), "{t:?} n {n}: {w:?}");
            }
        }
    }
}
