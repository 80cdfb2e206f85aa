use super::*;
use crate::collective::{DType, Op, ReduceOp, Shape};

const WORLDS: [usize; 5] = [1, 2, 3, 4, 64];

/// The reduction of the ranks' values in the order NCCL applies its operations: avg and
/// mulsum multiply each input first (avg by 1/p rounded to the type, mulsum by the rank's
/// scalar), then sum.
fn fold(dtype: DType, redop: ReduceOp, values: impl Iterator<Item = f64>) -> f64 {
    let values: Vec<f64> = values.collect();
    let p = values.len();
    match redop {
        ReduceOp::Sum => values.iter().sum(),
        ReduceOp::Prod => values.iter().product(),
        ReduceOp::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ReduceOp::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        ReduceOp::Avg if dtype.is_float() => values.iter().map(|&v| avg_of_one(dtype, v, p)).sum(),
        ReduceOp::Avg => (values.iter().sum::<f64>() / p as f64).trunc(),
        ReduceOp::MulSum => (0..p).map(|r| values[r] * mulsum_scalar(r)).sum(),
    }
}

/// Every rank's input buffer of `c`, filled as the benchmark fills it.
fn inputs(c: &Call, p: usize) -> Vec<Vec<u8>> {
    (0..p)
        .map(|r| {
            let mut buf = vec![0u8; c.shape.in_bytes];
            fill_input(c, p, r, &mut buf);
            buf
        })
        .collect()
}

/// A call of `op` on `shape` from `root`.
fn call(op: Op, dtype: DType, redop: ReduceOp, shape: Shape, root: usize) -> Call {
    Call {
        op,
        algo: op.host_algos()[0],
        dtype,
        redop,
        shape,
        root,
    }
}

/// Rank `rank`'s output by the nccl-tests definition of the call, computed directly from the
/// inputs (a non-root's Reduce and Gather output: zeros, as nccl-tests leaves it).
fn simulate(c: &Call, rank: usize, ins: &[Vec<u8>]) -> Vec<u8> {
    let (op, dtype, redop, shape) = (c.op, c.dtype, c.redop, &c.shape);
    let cpr = shape.count_per_rank;
    let mut out = vec![0u8; shape.out_bytes];
    let defined = !matches!(op, Op::Reduce | Op::Gather) || rank == c.root;
    for j in (0..shape.out_bytes / dtype.size()).filter(|_| defined) {
        let v = match op {
            Op::AllReduce | Op::Reduce => {
                fold(dtype, redop, ins.iter().map(|b| read_value(dtype, b, j)))
            }
            Op::ReduceScatter => fold(
                dtype,
                redop,
                ins.iter().map(|b| read_value(dtype, b, rank * cpr + j)),
            ),
            Op::AllGather | Op::Gather | Op::Hypercube => read_value(dtype, &ins[j / cpr], j % cpr),
            Op::Broadcast => read_value(dtype, &ins[c.root], j),
            Op::Scatter => read_value(dtype, &ins[c.root], rank * cpr + j),
            Op::AllToAll | Op::AllToAllV => read_value(dtype, &ins[j / cpr], rank * cpr + j % cpr),
            Op::SendRecv => read_value(dtype, &ins[(rank + ins.len() - 1) % ins.len()], j),
        };
        write_value(dtype, &mut out, j, v);
    }
    out
}

/// Elements where two output buffers differ.
fn differing(dtype: DType, a: &[u8], b: &[u8]) -> u64 {
    let n = a.len() / dtype.size();
    (0..n)
        .filter(|&i| read_value(dtype, a, i) != read_value(dtype, b, i))
        .count() as u64
}

/// `buf` with elements `[x, x + len)` and `[y, y + len)` exchanged.
fn swapped(dtype: DType, buf: &[u8], x: usize, y: usize, len: usize) -> Vec<u8> {
    let el = dtype.size();
    let mut out = buf.to_vec();
    out[x * el..(x + len) * el].copy_from_slice(&buf[y * el..(y + len) * el]);
    out[y * el..(y + len) * el].copy_from_slice(&buf[x * el..(x + len) * el]);
    out
}

/// Checks one (op, dtype, redop, p), rooted ops from the first and the last rank: exact
/// outputs pass; a corrupted element, a missing element and misplaced blocks are counted
/// exactly.
fn check_case(op: Op, dtype: DType, redop: ReduceOp, p: usize) {
    let shape = Shape::new(op, dtype, 37 * p * dtype.size(), p);
    let ins = inputs(&call(op, dtype, redop, shape, 0), p);
    let mut roots = if op.rooted() { vec![0, p - 1] } else { vec![0] };
    roots.dedup();
    for root in roots {
        let c = call(op, dtype, redop, shape, root);
        let mut ranks = vec![0, 1.min(p - 1), p - 1];
        ranks.dedup();
        for rank in ranks {
            check_rank(&c, p, rank, &ins);
        }
    }
}

fn check_rank(c: &Call, p: usize, rank: usize, ins: &[Vec<u8>]) {
    let (op, dtype) = (c.op, c.dtype);
    let case = format!("{op} {dtype} {} p={p} root {}", c.redop, c.root);
    let out = simulate(c, rank, ins);
    let wrong = |buf: &[u8]| count_wrong(c, p, rank, buf);
    if matches!(op, Op::Reduce | Op::Gather) && rank != c.root {
        assert_eq!(
            wrong(&vec![0xA5; out.len()]),
            0,
            "{case}: non-root output is not checked"
        );
        return;
    }
    assert_eq!(wrong(&out), 0, "{case} rank {rank}");
    let mut bad = out.clone();
    let last = out.len() / dtype.size() - 1;
    let v = read_value(dtype, &out, last);
    write_value(dtype, &mut bad, last, if v == 0.0 { 1.0 } else { 0.0 });
    assert_eq!(wrong(&bad), 1, "{case}: one corrupted element");
    assert_eq!(
        wrong(&out[..out.len() - dtype.size()]),
        1,
        "{case}: one missing element"
    );
    check_misplaced(c, p, rank, ins, &out);
}

/// Moves whole blocks to the wrong place and checks the exact count; sums and plain copies
/// must notice, saturated max/min may not.
fn check_misplaced(c: &Call, p: usize, rank: usize, ins: &[Vec<u8>], out: &[u8]) {
    let (op, dtype, redop, shape) = (c.op, c.dtype, c.redop, &c.shape);
    if p < 2 {
        return;
    }
    let n = out.len() / dtype.size();
    let bad = match op {
        // Rank 0's block delivered in rank 1's slot and vice versa.
        Op::AllGather | Op::Gather | Op::Hypercube => {
            swapped(dtype, out, 0, shape.count_per_rank, shape.count_per_rank)
        }
        // This rank received the blocks meant for another rank.
        Op::ReduceScatter | Op::AllToAll | Op::SendRecv | Op::Scatter => {
            simulate(c, (rank + 1) % p, ins)
        }
        // The data of another root.
        Op::Broadcast => simulate(
            &Call {
                root: (c.root + 1) % p,
                ..*c
            },
            rank,
            ins,
        ),
        // The two halves of the buffer exchanged.
        _ => swapped(dtype, out, 0, n / 2, n / 2),
    };
    let want = differing(dtype, out, &bad);
    let case = format!("{op} {dtype} {redop} p={p} rank {rank} root {}", c.root);
    assert_eq!(count_wrong(c, p, rank, &bad), want, "{case}");
    if redop == ReduceOp::Sum || !op.reduces() || p <= 4 {
        assert!(want > 0, "{case}: misplaced blocks went unnoticed");
    }
}

#[test]
fn every_collective_dtype_redop_and_world() {
    for &op in Op::ALL {
        for &dtype in DType::ALL {
            for &redop in ReduceOp::ALL {
                for p in WORLDS {
                    check_case(op, dtype, redop, p);
                }
            }
        }
    }
}

#[test]
fn pattern_rule_hand_computed() {
    let cases = [
        (DType::BF16, 1, 257, 1),
        (DType::BF16, 64, 5, 1),
        (DType::BF16, 256, 2, 1),
        (DType::BF16, 257, 2, 2),
        (DType::BF16, 1000, 2, 4),
        (DType::F16, 3, 683, 1),
        (DType::F16, 64, 33, 1),
        (DType::F16, 3000, 2, 2),
        (DType::F32, 4, 65536, 1),
        (DType::F32, 512, 32769, 1),
        (DType::I32, 0, 65536, 1),
    ];
    for (dtype, p, modulus, stride) in cases {
        assert_eq!(
            Pattern::new(dtype, p),
            Pattern {
                modulus,
                stride,
                base: 0
            },
            "{dtype} p={p}"
        );
    }
}

#[test]
fn largest_possible_sum_is_exact() {
    for &dtype in DType::ALL {
        for p in [1, 2, 3, 64, 255, 256, 257, 1000, 5000] {
            let pat = Pattern::new(dtype, p);
            let contributors = p.div_ceil(pat.stride) as u64;
            assert!(
                (pat.modulus - 1) * contributors <= exact_limit(dtype),
                "{dtype} p={p}"
            );
        }
    }
    // bf16 with 1000 ranks: element 0 takes ones only from ranks 0, 4, 8, ...: 250 of them.
    let pat = Pattern::new(DType::BF16, 1000);
    assert!((0..1000)
        .filter(|&r| r % 4 != 0)
        .all(|r| pat.value(r, 0) == 0.0));
    assert!((0..1000).all(|r| pat.value(r, 3) <= 1.0));
}

#[test]
fn pattern_depends_on_rank_and_index() {
    let shape = Shape::new(Op::AllReduce, DType::F32, 64, 4);
    let c = call(Op::AllReduce, DType::F32, ReduceOp::Sum, shape, 0);
    let v = |r, i| input_value(&c, 4, r, i);
    let block = |r| (0..8).map(|i| v(r, i)).collect::<Vec<_>>();
    assert_ne!(block(0), block(1));
    assert_ne!(block(1), block(2));
    assert_ne!(
        (0..8).map(|i| v(0, i)).collect::<Vec<_>>(),
        (1..9).map(|i| v(0, i)).collect::<Vec<_>>()
    );
    // Periodic with PERIOD, and every value a small non-negative integer.
    assert_eq!(v(3, 5), v(3, 5 + PERIOD));
    assert!((0..1000).all(|i| v(2, i) >= 0.0 && v(2, i) < 65536.0 && v(2, i).fract() == 0.0));
}

#[test]
fn fill_writes_input_value() {
    let mut buf = vec![0u8; 10 * 2];
    let shape = Shape::new(Op::AllGather, DType::BF16, 60, 3);
    let c = call(Op::AllGather, DType::BF16, ReduceOp::Sum, shape, 0);
    fill_input(&c, 3, 2, &mut buf);
    for i in 0..10 {
        assert_eq!(read_value(DType::BF16, &buf, i), input_value(&c, 3, 2, i));
    }
}

#[test]
fn read_write_round_trip_and_bounds() {
    for &dtype in DType::ALL {
        let mut buf = vec![0u8; 3 * dtype.size()];
        // 37 is exact in every type but fp8 (from 32 to 64 e4m3 steps by 4, e5m2 by 8).
        let v = if dtype.fp8().is_some() { 6.0 } else { 37.0 };
        write_value(dtype, &mut buf, 1, v);
        write_value(dtype, &mut buf, 3, 1.0);
        write_value(dtype, &mut buf, usize::MAX, 1.0);
        assert_eq!(read_value(dtype, &buf, 1), v, "{dtype}");
        assert_eq!(
            (read_value(dtype, &buf, 0), read_value(dtype, &buf, 2)),
            (0.0, 0.0)
        );
        assert!(
            read_value(dtype, &buf, 3).is_nan() && read_value(dtype, &buf, usize::MAX).is_nan()
        );
    }
    let mut buf = [0u8; 4];
    write_value(DType::I32, &mut buf, 0, 1e12);
    assert_eq!(read_value(DType::I32, &buf, 0), i32::MAX as f64);
    write_value(DType::U8, &mut buf, 0, -3.0);
    assert_eq!(read_value(DType::U8, &buf, 0), 0.0);
    write_value(DType::F8E4M3, &mut buf, 0, 1e6);
    assert_eq!(read_value(DType::F8E4M3, &buf, 0), 448.0);
}

#[test]
fn empty_shape_has_nothing_wrong() {
    let shape = Shape::new(Op::AllGather, DType::F32, 8, 4);
    let c = call(Op::AllGather, DType::F32, ReduceOp::Sum, shape, 0);
    assert_eq!(count_wrong(&c, 4, 1, &[]), 0);
}

#[test]
fn pieces_fill_and_count_as_the_whole_buffer_does() {
    // 3 ranks, f16, 20000 elements (crosses the pattern period), pieces of 4096 + a remainder.
    let (p, dtype, piece_len) = (3, DType::F16, 4096);
    for op in Op::ALL.iter().copied() {
        let shape = Shape::new(op, dtype, 3 * 20_000 * 2, p);
        let c = call(op, dtype, ReduceOp::Sum, shape, 0);
        let ins = inputs(&c, p);
        let mut joined = Vec::new();
        for (k, chunk) in ins[1].chunks(piece_len * 2).enumerate() {
            let mut piece = vec![0u8; chunk.len()];
            fill_input_from(&c, p, 1, k * piece_len, &mut piece);
            joined.extend_from_slice(&piece);
        }
        assert_eq!(joined, ins[1], "{op}: fill by pieces");
        let mut out = simulate(&c, 0, &ins);
        // Two wrong elements in different pieces.
        write_value(dtype, &mut out, 5, 1000.0);
        write_value(dtype, &mut out, 9000, 1000.0);
        let whole = count_wrong(&c, p, 0, &out);
        let by_pieces: u64 = out
            .chunks(piece_len * 2)
            .enumerate()
            .map(|(k, bytes)| {
                let piece = Piece {
                    first: k * piece_len,
                    bytes,
                };
                count_wrong_in(&c, p, 0, piece)
            })
            .sum();
        assert_eq!((whole, by_pieces), (2, 2), "{op}");
    }
}

#[test]
fn sums_stay_exact_at_1024_ranks_and_beyond_in_any_order() {
    // Accumulated in the dtype itself, each partial sum rounded as a device would, forwards and
    // backwards: the result equals the exact sum the checker expects.
    use half::bf16;
    for p in [1024usize, 2048, 4096, 10_000] {
        let pat = Pattern::for_call(Op::AllReduce, DType::BF16, ReduceOp::Sum, p);
        for i in [0usize, 1, 2, 3, 17, 4092] {
            let exact: f64 = (0..p).map(|r| pat.value(r, i)).sum();
            let rounded = |order: &mut dyn Iterator<Item = usize>| {
                order.fold(bf16::ZERO, |acc, r| acc + bf16::from_f64(pat.value(r, i)))
            };
            assert_eq!(rounded(&mut (0..p)).to_f64(), exact, "p={p} i={i}");
            assert_eq!(rounded(&mut (0..p).rev()).to_f64(), exact, "p={p} i={i}");
        }
    }
}

#[test]
fn data_movement_keeps_a_wide_pattern_at_any_rank_count_and_finds_a_swapped_block() {
    // At 4096 ranks a reduction's bf16 pattern is 0/1 with most ranks silent; AllGather's is
    // each rank's own 0..=256, so two swapped blocks differ almost everywhere.
    let p = 4096;
    assert_eq!(
        Pattern::for_call(Op::AllGather, DType::BF16, ReduceOp::Sum, p).modulus,
        257
    );
    assert_eq!(
        Pattern::for_call(Op::AllReduce, DType::BF16, ReduceOp::Sum, p).modulus,
        2
    );
    let shape = Shape::new(Op::AllGather, DType::BF16, p * 64 * 2, p);
    let c = call(Op::AllGather, DType::BF16, ReduceOp::Sum, shape, 0);
    let cpr = shape.count_per_rank;
    let mut out = vec![0u8; shape.count * 2];
    for j in 0..p {
        let mut block = vec![0u8; cpr * 2];
        fill_input(&c, p, j, &mut block);
        out[j * cpr * 2..(j + 1) * cpr * 2].copy_from_slice(&block);
    }
    assert_eq!(count_wrong(&c, p, 7, &out), 0);
    let (a, b) = (1000 * cpr * 2, 1001 * cpr * 2);
    let block_a = out[a..a + cpr * 2].to_vec();
    out.copy_within(b..b + cpr * 2, a);
    out[b..b + cpr * 2].copy_from_slice(&block_a);
    assert!(
        count_wrong(&c, p, 7, &out) as usize > cpr,
        "most of both blocks differ"
    );
}
