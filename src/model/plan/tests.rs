//! Iteration defaults, what a plan skips and rounds, validation messages and the memory a point
//! needs.

use super::expand::distinct_sizes;
use super::*;
use crate::collective::Shape;

fn opts() -> SweepOptions {
    SweepOptions {
        ops: vec![Op::AllReduce, Op::AllGather],
        algos: vec![Algo::Ring, Algo::Tree],
        dtypes: vec![DType::F32],
        redop: ReduceOp::Sum,
        ranks: 4,
        world_sizes: vec![2, 3],
        sizes: vec![4, 8, 16],
        in_place: vec![false],
        iters: None,
        warmup: None,
        bind: Bind::Core,
        transport: TransportKind::Shm,
        shapes: Vec::new(),
        pairs: Vec::new(),
    }
}

#[test]
fn iteration_defaults() {
    assert_eq!(default_iters(8), 1000);
    assert_eq!(default_iters(1 << 20), 256);
    assert_eq!(default_iters(64 << 20), 20);
    assert_eq!(default_warmup(1000), 100);
    assert_eq!(default_warmup(20), 5);
}

#[test]
fn plan_skips_unrepresentable_and_unsupported() {
    let plan = opts().plan();
    // world 2: allreduce ring+tree 3 sizes each = 6; allgather ring: 4 B skipped, 8, 16 = 2.
    // world 3: allreduce 6; allgather: 4 and 8 skipped, 16 -> 12 B.
    assert_eq!(plan.points.len(), 6 + 2 + 6 + 1);
    assert!(plan
        .notes
        .iter()
        .any(|n| n.contains("rounded down to 12 B")));
    assert!(plan
        .notes
        .iter()
        .any(|n| n.contains("allgather has no tree")));
    let ag3 = plan.points.last().unwrap();
    assert_eq!(
        (ag3.world, ag3.call.shape.bytes, ag3.requested),
        (3, 12, 16)
    );
}

#[test]
fn validate_names_the_bad_world_size() {
    let mut o = opts();
    o.world_sizes = vec![2, 8];
    let e = o.validate().unwrap_err().to_string();
    assert!(e.contains("world size 8") && e.contains("--ranks 4"), "{e}");
    let mut o = opts();
    o.ops = vec![Op::AllGather];
    o.algos = vec![Algo::Tree];
    assert!(o
        .validate()
        .unwrap_err()
        .to_string()
        .contains("allgather runs ring"));
}

#[test]
fn rounding_notes_never_print_equal_sizes() {
    assert_eq!(
        distinct_sizes(1 << 20, 1000),
        ("1 MiB".into(), "1000 B".into())
    );
    let (a, b) = distinct_sizes(10_000_001, 10_000_000);
    assert_ne!(a, b);
    assert_eq!((a.as_str(), b.as_str()), ("10000001 B", "10000000 B"));
}

#[test]
fn memory_estimate_counts_only_the_scratch_an_algorithm_uses() {
    let point = |op, algo, in_place| {
        let shape = Shape::new(op, DType::F32, 64 << 20, 4);
        let call = Call {
            op,
            algo,
            dtype: DType::F32,
            redop: ReduceOp::Sum,
            shape,
        };
        Point {
            call,
            world: 4,
            nodes: 1,
            pair: None,
            in_place,
            requested: 64 << 20,
            iters: 1,
            warmup: 0,
        }
    };
    let mib = 1 << 20;
    assert_eq!(
        point(Op::AllReduce, Algo::Ring, false).bytes_per_rank(),
        128 * mib
    );
    assert_eq!(
        point(Op::AllReduce, Algo::Ring, true).bytes_per_rank(),
        64 * mib
    );
    assert_eq!(
        point(Op::AllReduce, Algo::RecursiveDoubling, false).bytes_per_rank(),
        192 * mib
    );
    // ReduceScatter: 64 MiB in, 16 MiB out, two 256 KiB scratch slices.
    assert_eq!(
        point(Op::ReduceScatter, Algo::Ring, false).bytes_per_rank(),
        80 * mib + 512 * 1024
    );
    assert_eq!(
        point(Op::AllGather, Algo::Ring, false).bytes_per_rank(),
        80 * mib
    );
    // Bruck AllToAll at 4 ranks: two packed halves of 2 blocks of 16 MiB beside in and out.
    assert_eq!(
        point(Op::AllToAll, Algo::Bruck, false).bytes_per_rank(),
        192 * mib
    );
    assert_eq!(
        point(Op::AllToAll, Algo::Bruck, true).bytes_per_rank(),
        128 * mib
    );
}
