//! The per-op table against nccl-tests' sizes and bus factors, with exact values.

use super::*;

#[test]
fn busbw_factors_match_nccl_tests() {
    assert_eq!(Op::AllReduce.busbw_factor(2), 1.0);
    assert_eq!(Op::AllReduce.busbw_factor(4), 1.5);
    assert_eq!(Op::AllReduce.busbw_factor(8), 1.75);
    assert_eq!(Op::AllGather.busbw_factor(4), 0.75);
    assert_eq!(Op::ReduceScatter.busbw_factor(2), 0.5);
    assert_eq!(Op::Broadcast.busbw_factor(8), 1.0);
    assert_eq!(Op::AllReduce.busbw_factor(1), 0.0);
}

#[test]
fn allreduce_shape_rounds_to_whole_elements() {
    let s = Shape::new(Op::AllReduce, DType::F32, 10, 4);
    assert_eq!((s.bytes, s.count, s.in_bytes, s.out_bytes), (8, 2, 8, 8));
}

#[test]
fn allgather_shape_rounds_per_rank() {
    // 100 bytes of f32 over 3 ranks: 25 elements, 8 per rank, 24 in all = 96 bytes.
    let s = Shape::new(Op::AllGather, DType::F32, 100, 3);
    assert_eq!((s.bytes, s.count, s.count_per_rank), (96, 24, 8));
    assert_eq!((s.in_bytes, s.out_bytes), (32, 96));
}

#[test]
fn reducescatter_shape_splits_output() {
    let s = Shape::new(Op::ReduceScatter, DType::F64, 64, 2);
    assert_eq!(
        (s.bytes, s.in_bytes, s.out_bytes, s.count_per_rank),
        (64, 64, 32, 4)
    );
}

#[test]
fn too_small_for_one_element_per_rank() {
    assert_eq!(Shape::new(Op::AllGather, DType::F32, 8, 4).bytes, 0);
    assert_eq!(Shape::new(Op::AllReduce, DType::F64, 4, 2).bytes, 0);
}

#[test]
fn call_counts_are_whole_buffer_or_per_rank() {
    // 1 MiB of f32 over 4 ranks: 262144 elements, 65536 per rank.
    for (op, want) in [
        (Op::AllReduce, 262_144),
        (Op::Broadcast, 262_144),
        (Op::Reduce, 262_144),
        (Op::AllGather, 65_536),
        (Op::ReduceScatter, 65_536),
    ] {
        let shape = Shape::new(op, DType::F32, 1 << 20, 4);
        assert_eq!(shape.call_count(op), want, "{op}");
    }
    // 100 bytes of f32 over 3 ranks: 8 per rank after rounding, 25 in the whole buffer.
    let split = Shape::new(Op::AllGather, DType::F32, 100, 3);
    assert_eq!(split.call_count(Op::AllGather), 8);
    let whole = Shape::new(Op::AllReduce, DType::F32, 100, 3);
    assert_eq!(whole.call_count(Op::AllReduce), 25);
}

#[test]
fn bandwidths() {
    let s = Shape::new(Op::AllReduce, DType::F32, 1 << 20, 4);
    // 1 MiB in 100 us = 10.48576 GB/s algbw, busbw x1.5.
    let alg = algbw_gbps(Op::AllReduce, s.bytes, 4, 100.0);
    assert!((alg - 10.48576).abs() < 1e-9);
    assert!((busbw_gbps(Op::AllReduce, 4, alg) - 15.72864).abs() < 1e-9);
}

#[test]
fn names_parse_back_and_unknown_is_named() {
    for op in Op::ALL {
        assert_eq!(op.name().parse::<Op>().unwrap(), *op);
    }
    let err = "allgatherr".parse::<Op>().unwrap_err().to_string();
    assert!(
        err.contains("allgatherr") && err.contains("allreduce"),
        "{err}"
    );
    assert_eq!("BF16".parse::<DType>().unwrap(), DType::BF16);
}

#[test]
fn alltoall_follows_nccl_tests() {
    // nccl-tests alltoall.cu: busbw = algbw × (p−1)/p; whole elements per peer block.
    assert_eq!(Op::AllToAll.busbw_factor(4), 0.75);
    let s = Shape::new(Op::AllToAll, DType::F32, 100, 3);
    assert_eq!((s.bytes, s.count, s.count_per_rank), (96, 24, 8));
    assert_eq!((s.in_bytes, s.out_bytes), (96, 96));
    assert_eq!(s.call_count(Op::AllToAll), 8);
    assert_eq!(
        Op::AllToAll.host_algos(),
        &[Algo::Pairwise, Algo::Bruck, Algo::Linear]
    );
    assert!(!Op::AllToAll.reduces());
    // NCCL runs it as grouped ncclSend/ncclRecv: no algorithm to force, no in-place form.
    assert_eq!(Op::AllToAll.nccl_algos(), &[Algo::Auto]);
    assert!(Op::AllToAll.nccl_point_to_point() && Op::AllToAll.nccl_no_in_place().is_some());
}

#[test]
fn sendrecv_follows_nccl_tests() {
    // nccl-tests sendrecv.cu: S to the next rank and from the previous one, busbw = algbw.
    assert_eq!(Op::SendRecv.busbw_factor(8), 1.0);
    let s = Shape::new(Op::SendRecv, DType::BF16, 101, 3);
    assert_eq!(
        (s.bytes, s.count, s.in_bytes, s.out_bytes),
        (100, 50, 100, 100)
    );
    assert_eq!(s.call_count(Op::SendRecv), 50);
    assert_eq!(Op::SendRecv.host_algos(), &[Algo::Direct]);
    assert_eq!(Op::SendRecv.mpi_algos(), &[Algo::Auto]);
    assert_eq!(Op::SendRecv.nccl_algos(), &[Algo::Auto]);
    assert!(Op::SendRecv.nccl_point_to_point() && Op::SendRecv.nccl_no_in_place().is_some());
    // The collectives stay collectives, measured in place too.
    for op in [
        Op::AllReduce,
        Op::AllGather,
        Op::ReduceScatter,
        Op::Broadcast,
        Op::Reduce,
    ] {
        assert!(
            !op.nccl_point_to_point() && op.nccl_no_in_place().is_none(),
            "{op}"
        );
    }
}

#[test]
fn every_row_is_complete_and_consistent() {
    let mut tests: Vec<&str> = Vec::new();
    for &op in Op::ALL {
        let row = op.row();
        assert!(row.nccl_test.ends_with("_perf"), "{op}: {}", row.nccl_test);
        assert_eq!(row.title.to_lowercase(), op.name(), "{op}");
        assert!(
            !tests.contains(&row.nccl_test),
            "{op} repeats {}",
            row.nccl_test
        );
        tests.push(row.nccl_test);
        assert!(!row.host.is_empty(), "{op} has no host algorithm");
        assert_eq!(row.projection.last(), Some(&Algo::Auto), "{op}");
        // Every forced MPI algorithm is offered, and every offered one but auto is forced.
        for &(algo, _) in row.mpi_tuned {
            assert!(row.mpi.contains(&algo), "{op} {algo}");
        }
        assert_eq!(row.mpi_tuned.len() + 1, row.mpi.len().max(1), "{op}");
        assert_eq!(
            row.mpi_tuned_name.is_some(),
            !row.mpi_tuned.is_empty(),
            "{op}"
        );
        // Scratch is named only for algorithms some backend runs.
        for &(algo, _) in row.scratch {
            let offered = [row.host, row.mpi, row.nccl]
                .iter()
                .any(|l| l.contains(&algo));
            assert!(offered, "{op} names scratch for {algo}");
        }
        // Ring phases only where a backend runs a ring.
        let ring = [row.host, row.mpi, row.nccl]
            .iter()
            .any(|l| l.contains(&Algo::Ring));
        assert!(row.ring_phases == 0 || ring, "{op}");
    }
}

#[test]
fn semantics_fix_layout_reduction_and_root() {
    assert_eq!(Op::AllGather.layout(), Layout::Collect);
    assert_eq!(Op::Scatter.layout(), Layout::Distribute);
    assert_eq!(Op::AllToAll.layout(), Layout::Exchange);
    assert_eq!(Op::SendRecv.layout(), Layout::Whole);
    let reducing: Vec<Op> = Op::ALL.iter().copied().filter(|o| o.reduces()).collect();
    assert_eq!(reducing, [Op::AllReduce, Op::ReduceScatter, Op::Reduce]);
    let rooted: Vec<Op> = Op::ALL.iter().copied().filter(|o| o.rooted()).collect();
    assert_eq!(rooted, [Op::Broadcast, Op::Reduce, Op::Gather, Op::Scatter]);
    assert!(Op::AllGather.runs_at(3) && Op::AllToAll.runs_at(6));
}

#[test]
fn scratch_comes_from_the_row() {
    assert_eq!(Op::ReduceScatter.scratch(Algo::Ring), Scratch::RingSlices);
    assert_eq!(
        Op::AllReduce.scratch(Algo::RecursiveDoubling),
        Scratch::Partner
    );
    assert_eq!(Op::AllReduce.scratch(Algo::Ring), Scratch::None);
    assert_eq!(Op::AllToAll.scratch(Algo::Bruck), Scratch::BruckBlocks);
    assert_eq!(Op::Scatter.scratch(Algo::Binomial), Scratch::Subtree);
    assert_eq!(Op::SendRecv.scratch(Algo::Direct), Scratch::InPlaceCopy);
    assert_eq!(Op::AllGather.mpi_tuned(Algo::Bruck), Some(("allgather", 2)));
    assert_eq!(Op::SendRecv.mpi_tuned(Algo::Auto), None);
}

#[test]
fn hypercube_counts_bandwidth_as_nccl_tests_does() {
    // HyperCubeGetBw: algbw = count·size·(p-1)/t with count per rank, bus factor 1. 1 MiB over
    // 4 ranks in 100 us: S/t = 10.48576 GB/s, of which a rank receives 3/4.
    let s = Shape::new(Op::Hypercube, DType::F32, 1 << 20, 4);
    assert_eq!(
        (s.in_bytes, s.out_bytes, s.count_per_rank),
        (1 << 18, 1 << 20, 1 << 16)
    );
    let alg = algbw_gbps(Op::Hypercube, s.bytes, 4, 100.0);
    assert!((alg - 7.86432).abs() < 1e-9);
    assert_eq!(busbw_gbps(Op::Hypercube, 4, alg), alg);
    // The same number as AllGather's busbw, reached the other way round.
    let ag = algbw_gbps(Op::AllGather, s.bytes, 4, 100.0);
    assert!((busbw_gbps(Op::AllGather, 4, ag) - alg).abs() < 1e-12);
    assert_eq!(Op::Hypercube.semantics(), Semantics::AllGather);
    assert!(Op::Hypercube.runs_at(8) && !Op::Hypercube.runs_at(6));
    assert_eq!(Op::Hypercube.nccl_test(), "hypercube_perf");
    assert!(Op::Hypercube.mpi_algos().is_empty() && Op::Hypercube.nccl_algos().is_empty());
}

#[test]
fn split_buffers_round_to_16_byte_blocks_as_nccl_tests_2_19() {
    // all_gather.cu: base = (count/nranks) & ~(16/eltSize - 1). 1000 B of f32 at 4 ranks:
    // 250 elements, 62 per rank, 60 after the mask: 960 B (whole elements alone gave 992 B).
    let s = Shape::new(Op::AllGather, DType::F32, 1000, 4);
    assert_eq!((s.bytes, s.count_per_rank), (960, 60));
    // f64 blocks are multiples of 2 elements, f16 of 8; at powers of two the rule rarely bites.
    assert_eq!(
        Shape::new(Op::ReduceScatter, DType::F64, 1000, 3).bytes,
        960
    );
    assert_eq!(Shape::new(Op::AllToAll, DType::F16, 1000, 6).bytes, 960);
    assert_eq!(
        Shape::new(Op::Scatter, DType::F32, 1 << 20, 8).bytes,
        1 << 20
    );
    // Less than one block per rank: nothing to measure.
    assert_eq!(Shape::new(Op::Gather, DType::F32, 96, 8).bytes, 0);
    assert_eq!(Shape::new(Op::Gather, DType::F32, 128, 8).bytes, 128);
    // Whole-buffer ops keep whole elements.
    assert_eq!(Shape::new(Op::AllReduce, DType::F32, 1000, 3).bytes, 1000);
    assert_eq!(block_count(250, 4, 4), 60);
    assert_eq!(block_count(7, 1, 8), 6);
}
