//! The grouped calls of AllToAll and SendRecv without a GPU: the exact lists for 1 to 5 ranks
//! in and out of place, every send matched by a receive, and the lists run on host buffers
//! (sends matched to receives in order, as NCCL matches them) giving outputs that the shared
//! checker finds exact.

use super::*;
use crate::backend::nccl::placement::{placement, Buf, Region};
use crate::check::{count_wrong, fill_input_from};
use crate::collective::{Algo, DType, Op, ReduceOp, Shape};
use crate::model::call::Call;
use crate::model::plan::Point;

/// Fake device addresses of the two buffers, far apart.
const INPUT: u64 = 1 << 40;
const OUTPUT: u64 = 2 << 40;

fn point(op: Op, dtype: DType, requested: usize, world: usize, in_place: bool) -> Point {
    rooted(op, dtype, requested, world, in_place, 0)
}

fn rooted(op: Op, dtype: DType, bytes: usize, world: usize, in_place: bool, root: usize) -> Point {
    let requested = bytes;
    let shape = Shape::new(op, dtype, requested, world);
    Point {
        call: Call {
            op,
            algo: Algo::Auto,
            dtype,
            redop: ReduceOp::Sum,
            shape,
            root,
        },
        world,
        nodes: 1,
        pair: None,
        in_place,
        requested,
        iters: 1,
        warmup: 0,
        timing: Default::default(),
        cycle: 0,
        traffic: None,
        split: None,
        compute: None,
    }
}

fn address(r: Region) -> u64 {
    let base = match r.buf {
        Buf::Input => INPUT,
        Buf::Output => OUTPUT,
    };
    base + r.offset as u64
}

/// The call rank `rank` makes for `p`, as the measurement builds it (placement, count).
fn enqueue(p: &Point, rank: usize) -> Enqueue {
    let pl = placement(p, rank);
    let c = &p.call;
    Enqueue {
        op: c.op,
        dtype: c.dtype,
        redop: c.redop,
        made_redop: None,
        send: address(pl.send),
        recv: address(pl.recv),
        count: c.shape.call_count(c.op),
        root: c.root as i32,
        rank,
        nranks: p.world,
    }
}

/// (direction, peer, address, count) of every call, in order.
fn calls(e: &Enqueue) -> Vec<(Dir, usize, u64, usize)> {
    transfers(e)
        .expect("a point-to-point op")
        .iter()
        .map(|t| (t.dir, t.peer, t.address(e), t.count))
        .collect()
}

#[test]
fn collectives_are_not_point_to_point_groups() {
    for op in [
        Op::AllReduce,
        Op::AllGather,
        Op::ReduceScatter,
        Op::Broadcast,
        Op::Reduce,
    ] {
        let e = enqueue(&point(op, DType::F32, 1024, 4, false), 1);
        assert_eq!(transfers(&e), None, "{op}");
        assert!(!op.nccl_point_to_point());
    }
}

/// The grouped ops, the rooted ones from the first and from the last rank (taken modulo n).
const P2P_ROOTS: [(Op, usize); 6] = [
    (Op::AllToAll, 0),
    (Op::SendRecv, 0),
    (Op::Gather, 0),
    (Op::Gather, 4),
    (Op::Scatter, 0),
    (Op::Scatter, 4),
];

#[test]
fn gather_sends_to_the_root_which_receives_block_r_from_every_rank() {
    use Dir::{Recv, Send};
    // 3 ranks, f32, 96 B from root 2: 8 elements (32 B) per rank.
    let p = rooted(Op::Gather, DType::F32, 96, 3, false, 2);
    assert_eq!(calls(&enqueue(&p, 0)), [(Send, 2, INPUT, 8)]);
    let root = [
        (Send, 2, INPUT, 8),
        (Recv, 0, OUTPUT, 8),
        (Recv, 1, OUTPUT + 32, 8),
        (Recv, 2, OUTPUT + 64, 8),
    ];
    assert_eq!(calls(&enqueue(&p, 2)), root);
    // In place the root's own block is sent from where it is received: NCCL skips that copy.
    let p = rooted(Op::Gather, DType::F32, 96, 3, true, 2);
    let e = enqueue(&p, 2);
    let own = calls(&e);
    assert_eq!((own[0].2, own[3].2), (OUTPUT + 64, OUTPUT + 64));
}

#[test]
fn scatter_root_sends_block_r_to_every_rank_which_receives_its_block() {
    use Dir::{Recv, Send};
    let p = rooted(Op::Scatter, DType::F32, 96, 3, false, 1);
    assert_eq!(calls(&enqueue(&p, 0)), [(Recv, 1, OUTPUT, 8)]);
    let root = [
        (Send, 0, INPUT, 8),
        (Send, 1, INPUT + 32, 8),
        (Send, 2, INPUT + 64, 8),
        (Recv, 1, OUTPUT, 8),
    ];
    assert_eq!(calls(&enqueue(&p, 1)), root);
}

#[test]
fn alltoall_sends_and_receives_block_r_with_every_rank_r() {
    // 3 ranks, f32, 96 B: 8 elements (32 B) per peer; rank 1 out of place.
    let e = enqueue(&point(Op::AllToAll, DType::F32, 96, 3, false), 1);
    assert_eq!(e.count, 8);
    use Dir::{Recv, Send};
    assert_eq!(
        calls(&e),
        [
            (Send, 0, INPUT, 8),
            (Recv, 0, OUTPUT, 8),
            (Send, 1, INPUT + 32, 8),
            (Recv, 1, OUTPUT + 32, 8),
            (Send, 2, INPUT + 64, 8),
            (Recv, 2, OUTPUT + 64, 8),
        ]
    );
    for n in 1..=5 {
        for dtype in [DType::F32, DType::BF16, DType::F64] {
            for in_place in [false, true] {
                let p = point(Op::AllToAll, dtype, 4096, n, in_place);
                let block = p.call.shape.count_per_rank * dtype.size();
                for rank in 0..n {
                    let e = enqueue(&p, rank);
                    let want: Vec<_> = (0..n)
                        .flat_map(|r| {
                            let at = (r * block) as u64;
                            let count = p.call.shape.count_per_rank;
                            [(Send, r, e.send + at, count), (Recv, r, e.recv + at, count)]
                        })
                        .collect();
                    assert_eq!(
                        calls(&e),
                        want,
                        "n {n} {dtype} rank {rank} in place {in_place}"
                    );
                    // The blocks tile the whole buffer of S bytes on both sides.
                    assert_eq!(n * block, p.call.shape.bytes);
                    // nccl-tests in place: one buffer and offset 0 on both sides, so a rank
                    // receives block r where it sends block r from (undefined, hence not
                    // planned on the nccl backend).
                    assert_eq!(e.send == e.recv, in_place);
                    let place = if in_place { OUTPUT } else { INPUT };
                    assert_eq!(e.send, place);
                    assert_eq!(e.recv, OUTPUT);
                }
            }
        }
    }
}

#[test]
fn sendrecv_sends_to_the_next_rank_and_receives_from_the_previous() {
    use Dir::{Recv, Send};
    let want = |n: usize, rank: usize, count: usize, send: u64| {
        vec![
            (Send, (rank + 1) % n, send, count),
            (Recv, (rank + n - 1) % n, OUTPUT, count),
        ]
    };
    // 4 ranks, bf16, 100 B: the whole 50 elements each way.
    let p = point(Op::SendRecv, DType::BF16, 100, 4, false);
    assert_eq!(calls(&enqueue(&p, 0)), want(4, 0, 50, INPUT));
    assert_eq!(calls(&enqueue(&p, 0))[1].1, 3);
    for n in 1..=5 {
        for in_place in [false, true] {
            let p = point(Op::SendRecv, DType::F32, 1000, n, in_place);
            let send = if in_place { OUTPUT } else { INPUT };
            for rank in 0..n {
                let e = enqueue(&p, rank);
                assert_eq!(e.count, 250);
                assert_eq!(calls(&e), want(n, rank, 250, send), "n {n} rank {rank}");
            }
        }
    }
    // A world of one sends to itself and receives from itself.
    let e = enqueue(&point(Op::SendRecv, DType::F32, 8, 1, false), 0);
    assert_eq!(calls(&e), [(Send, 0, INPUT, 2), (Recv, 0, OUTPUT, 2)]);
}

#[test]
fn every_send_has_its_receive_in_the_same_order() {
    for (op, root) in P2P_ROOTS {
        for n in 1..=5 {
            let p = rooted(op, DType::F32, 4096, n, false, root % n);
            let lists: Vec<_> = (0..n)
                .map(|r| transfers(&enqueue(&p, r)).unwrap())
                .collect();
            for src in 0..n {
                for dst in 0..n {
                    let sends: Vec<usize> = lists[src]
                        .iter()
                        .filter(|t| t.dir == Dir::Send && t.peer == dst)
                        .map(|t| t.count)
                        .collect();
                    let recvs: Vec<usize> = lists[dst]
                        .iter()
                        .filter(|t| t.dir == Dir::Recv && t.peer == src)
                        .map(|t| t.count)
                        .collect();
                    assert_eq!(sends, recvs, "{op} n {n}: {src} -> {dst}");
                }
            }
        }
    }
}

/// Which buffer of a rank, and where in it, a fake address points.
fn locate(addr: u64) -> (Buf, usize) {
    if addr >= OUTPUT {
        (Buf::Output, (addr - OUTPUT) as usize)
    } else {
        (Buf::Input, (addr - INPUT) as usize)
    }
}

/// Runs `lists` (each rank's calls for `p`, out of place) on host buffers: the k-th send from
/// a to b delivers into the k-th receive at b from a, as NCCL matches them. Returns every
/// rank's wrong count by the shared checker.
fn run_on_host(p: &Point, lists: &[Vec<Transfer>]) -> Vec<u64> {
    let (n, c) = (p.world, &p.call);
    let output = outputs_on_host(p, lists);
    (0..n)
        .map(|rank| count_wrong(c, n, rank, checked(p, rank, &output[rank])))
        .collect()
}

/// The region of rank `rank`'s output buffer that its check reads.
pub(super) fn checked<'a>(p: &Point, rank: usize, output: &'a [u8]) -> &'a [u8] {
    let check = placement(p, rank).check;
    &output[check.offset..check.offset + check.len]
}

/// Every rank's output buffer after `lists` ran on host buffers ([`run_on_host`]).
pub(super) fn outputs_on_host(p: &Point, lists: &[Vec<Transfer>]) -> Vec<Vec<u8>> {
    let (n, c) = (p.world, &p.call);
    let el = c.dtype.size();
    let mut input = Vec::new();
    let mut output = Vec::new();
    for rank in 0..n {
        let pl = placement(p, rank);
        let mut buf = vec![0u8; c.shape.in_bytes];
        assert_eq!((pl.fill.buf, pl.fill.offset), (Buf::Input, 0));
        fill_input_from(c, n, rank, 0, &mut buf[..pl.fill.len]);
        input.push(buf);
        output.push(vec![0xffu8; pl.output_len]);
    }
    let es: Vec<Enqueue> = (0..n).map(|r| enqueue(p, r)).collect();
    let mut pending: Vec<Vec<std::collections::VecDeque<(u64, usize)>>> =
        vec![vec![Default::default(); n]; n];
    for (src, list) in lists.iter().enumerate() {
        for t in list.iter().filter(|t| t.dir == Dir::Send) {
            pending[src][t.peer].push_back((t.address(&es[src]), t.count));
        }
    }
    for (dst, list) in lists.iter().enumerate() {
        for t in list.iter().filter(|t| t.dir == Dir::Recv) {
            let (from, count) = pending[t.peer][dst].pop_front().expect("a matching send");
            assert_eq!(count, t.count, "send and receive counts differ");
            let (buf, at) = locate(from);
            assert_eq!(buf, Buf::Input, "out of place sends read the input");
            let data = input[t.peer][at..at + count * el].to_vec();
            let (buf, to) = locate(t.address(&es[dst]));
            assert_eq!(buf, Buf::Output, "receives write the output");
            output[dst][to..to + count * el].copy_from_slice(&data);
        }
    }
    assert!(
        pending.iter().flatten().all(|q| q.is_empty()),
        "unmatched sends"
    );
    output
}

#[test]
fn the_grouped_calls_deliver_exactly_what_the_checker_expects() {
    // One element, blocks shorter and longer than the pattern's period, odd element counts.
    for (op, root) in P2P_ROOTS {
        for n in 1..=5 {
            for dtype in [DType::F32, DType::BF16, DType::F64, DType::I32] {
                for requested in [8 * 5, 1000, 70_001] {
                    let p = rooted(op, dtype, requested, n, false, root % n);
                    if p.call.shape.bytes == 0 {
                        continue;
                    }
                    let lists: Vec<_> = (0..n)
                        .map(|r| transfers(&enqueue(&p, r)).unwrap())
                        .collect();
                    let wrong = run_on_host(&p, &lists);
                    assert!(
                        wrong.iter().all(|&w| w == 0),
                        "{op} n {n} {dtype} {requested} B: {wrong:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn misrouted_calls_are_caught_by_the_check() {
    for n in 2..=5 {
        // AllToAll with each receive landing in the next block: every block misplaced.
        let p = point(Op::AllToAll, DType::F32, 4096, n, false);
        let block = p.call.shape.count_per_rank * 4;
        let lists: Vec<_> = (0..n)
            .map(|r| {
                let mut list = transfers(&enqueue(&p, r)).unwrap();
                for t in list.iter_mut().filter(|t| t.dir == Dir::Recv) {
                    t.offset = (t.offset + block) % (n * block);
                }
                list
            })
            .collect();
        let wrong = run_on_host(&p, &lists);
        assert!(wrong.iter().all(|&w| w > 0), "alltoall n {n}: {wrong:?}");
    }
    for n in 3..=5 {
        // SendRecv the wrong way round (to r−1, from r+1).
        let p = point(Op::SendRecv, DType::F32, 4096, n, false);
        let lists: Vec<_> = (0..n)
            .map(|r| {
                let mut list = transfers(&enqueue(&p, r)).unwrap();
                let (a, b) = (list[0].peer, list[1].peer);
                list[0].peer = b;
                list[1].peer = a;
                list
            })
            .collect();
        let wrong = run_on_host(&p, &lists);
        assert!(wrong.iter().all(|&w| w > 0), "sendrecv n {n}: {wrong:?}");
    }
}
