//! Iteration defaults, what a plan skips and rounds, validation messages and the memory a point
//! needs.

use super::expand::distinct_sizes;
use super::*;
use crate::collective::Shape;
use crate::model::call::BackendKind;

/// Options of a small host sweep, for tests here and of the rank side.
pub(crate) fn opts() -> SweepOptions {
    SweepOptions {
        ops: vec![Op::AllReduce, Op::AllGather],
        algos: vec![Algo::Ring, Algo::Tree],
        dtypes: vec![DType::F32],
        redops: vec![ReduceOp::Sum],
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
        root: Roots::default(),
        default_algos: false,
        loop_timing: Default::default(),
        soak: Default::default(),
        traffic: None,
        split: None,
        with_compute: None,
        concurrent: None,
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
    let mut o = opts();
    o.sizes.push(100);
    let plan = o.plan();
    // world 2: allreduce ring+tree 4 sizes each = 8; allgather ring: 4, 8 and 16 B hold less
    // than a 16-byte block per rank, 100 B -> 96 B (12 elements per rank) = 1.
    // world 3: allreduce 8; allgather: 100 B -> 96 B (8 per rank) = 1.
    assert_eq!(plan.points.len(), 8 + 1 + 8 + 1);
    assert!(plan
        .notes
        .iter()
        .any(|n| n.contains("16 B holds less than one 16-byte block per rank")));
    assert!(plan
        .notes
        .iter()
        .any(|n| n.contains("rounded down to 96 B")));
    assert!(plan
        .notes
        .iter()
        .any(|n| n.contains("allgather has no tree")));
    let ag3 = plan.points.last().unwrap();
    assert_eq!(
        (ag3.world, ag3.call.shape.bytes, ag3.requested),
        (3, 96, 100)
    );
}

#[test]
fn nccl_plans_point_to_point_ops_out_of_place_only() {
    let mut o = opts();
    o.ops = vec![Op::AllToAll, Op::SendRecv, Op::AllReduce];
    o.algos = vec![Algo::Auto];
    o.sizes = vec![64];
    o.in_place = vec![false, true];
    let plan = o.plan_for(BackendKind::Nccl);
    // Two worlds; allreduce in and out of place, alltoall and sendrecv out of place only.
    let count = |op: Op, in_place: bool| {
        plan.points
            .iter()
            .filter(|p| p.call.op == op && p.in_place == in_place)
            .count()
    };
    assert_eq!(count(Op::AllReduce, false), 2);
    assert_eq!(count(Op::AllReduce, true), 2);
    for op in [Op::AllToAll, Op::SendRecv] {
        assert_eq!((count(op, false), count(op, true)), (2, 0), "{op}");
        assert!(
            plan.notes.iter().any(|n| n.starts_with(&format!(
                "{op} in place is not measured on the nccl backend: NCCL's point-to-point"
            ))),
            "{:?}",
            plan.notes
        );
    }
    // Out of place only: nothing skipped, nothing said.
    o.in_place = vec![false];
    let plan = o.plan_for(BackendKind::Nccl);
    assert!(
        plan.notes.iter().all(|n| !n.contains("in place")),
        "{:?}",
        plan.notes
    );
    // The host and MPI backends measure them in place (through a scratch copy, MPI_IN_PLACE).
    o.in_place = vec![true];
    o.algos = vec![Algo::Auto, Algo::Pairwise, Algo::Direct];
    for backend in [BackendKind::Host, BackendKind::Mpi] {
        let plan = o.plan_for(backend);
        for op in [Op::AllToAll, Op::SendRecv] {
            assert!(
                plan.points.iter().any(|p| p.call.op == op && p.in_place),
                "{backend} {op}"
            );
        }
    }
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
    // 1048572 B reads as "1024.0 KiB", which hid the 4 bytes the note is about.
    assert_eq!(
        distinct_sizes(1 << 20, 1_048_572),
        ("1048576 B".into(), "1048572 B".into())
    );
    assert_eq!(
        distinct_sizes(3 << 20, 2 << 20),
        ("3 MiB".into(), "2 MiB".into())
    );
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
            root: 0,
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
            timing: Default::default(),
            cycle: 0,
            traffic: None,
            split: None,
            compute: None,
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
    // Pairwise AllToAll and SendRecv in place copy the one buffer to scratch first.
    let pairwise = |in_place| point(Op::AllToAll, Algo::Pairwise, in_place).bytes_per_rank();
    assert_eq!((pairwise(false), pairwise(true)), (128 * mib, 128 * mib));
    assert_eq!(
        point(Op::SendRecv, Algo::Direct, true).bytes_per_rank(),
        128 * mib
    );
    // Gather and Scatter at 4 ranks: 16 MiB and 64 MiB beside; binomial inner ranks stage a
    // subtree of 2 blocks, linear nothing.
    for op in [Op::Gather, Op::Scatter] {
        assert_eq!(point(op, Algo::Binomial, false).bytes_per_rank(), 112 * mib);
        assert_eq!(point(op, Algo::Linear, false).bytes_per_rank(), 80 * mib);
    }
}

/// An alltoallv curve: the matrix fixes one point per world, a world its block leaves empty is
/// skipped with one note, and the note on sizes is said once for every algorithm and placement.
#[test]
fn an_alltoallv_matrix_plans_one_point_per_world_it_sends_in() {
    use crate::collective::traffic_spec::TrafficSpec;
    let spec: TrafficSpec = "matrix=m.txt".parse().unwrap();
    let read = |_: &std::path::Path| Ok("0 0 16\n0 0 32\n16 48 0\n".to_string());
    let mut o = opts();
    (o.ops, o.algos, o.ranks) = (vec![Op::AllToAllV], vec![Algo::Pairwise], 3);
    (o.sizes, o.in_place) = (vec![1024, 2048, 4096], vec![false, true]);
    o.traffic = Some(spec.read(&read).unwrap());
    let plan = o.plan();
    let worlds: Vec<(usize, bool, usize)> = (plan.points.iter())
        .map(|p| (p.world, p.in_place, p.call.shape.bytes))
        .collect();
    // World 3: rank 2 sends 16 + 48 = 64 B, the most any rank sends or receives.
    assert_eq!(worlds, [(3, false, 64), (3, true, 64)]);
    let nothing = plan
        .notes
        .iter()
        .filter(|n| n.contains("sends nothing"))
        .count();
    let fixes = plan
        .notes
        .iter()
        .filter(|n| n.contains("fixes the size"))
        .count();
    assert_eq!((nothing, fixes), (1, 1), "{:#?}", plan.notes);
    assert!(plan.points.iter().all(|p| p.traffic.is_some()));
}

#[path = "tests_beside.rs"]
mod beside;
