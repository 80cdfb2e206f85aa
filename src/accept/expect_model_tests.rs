use super::*;
use crate::collective::{Algo, DType, Op};

fn key(op: Op, dtype: DType, world: usize, nodes: usize, bytes: usize) -> GroupKey {
    GroupKey {
        op,
        algo: Algo::Ring,
        proto: None,
        dtype,
        world,
        nodes,
        bytes,
        in_place: false,
        root: None,
        comm: Default::default(),
    }
}

fn h100() -> ExpectModel {
    ExpectModel::load("h100-ib400").unwrap()
}

/// The bundled profile's own prediction at a point.
fn predicted(k: &GroupKey) -> Prediction {
    let q = Query {
        op: k.op,
        algo: k.algo,
        proto: None,
        dtype: Some(DType::BF16),
        world: k.world,
        nodes: k.nodes,
        bytes: k.bytes,
        comm: k.comm,
        algo_given: true,
    };
    predict(&h100().fit, &q).unwrap()
}

#[test]
fn models_are_told_from_busbw_profiles_by_name() {
    assert!(ExpectModel::names_one("h100-ib400"));
    assert!(ExpectModel::names_one("runs/fit.json"));
    assert!(!ExpectModel::names_one("h100-nvswitch"));
    assert!(!ExpectModel::names_one("mine.toml"));
    assert_eq!(h100().name, "h100-ib400");
}

#[test]
fn small_points_are_judged_on_time_and_large_ones_on_busbw() {
    let small = key(Op::AllReduce, DType::BF16, 16, 2, 64 << 10);
    let large = key(Op::AllReduce, DType::BF16, 16, 2, 8 << 30);
    let (criteria, notes) = h100().criteria(&[small.clone(), large.clone()], 0.1);
    assert_eq!(criteria.len(), 2, "{criteria:?}");
    let p = predicted(&small);
    assert_eq!(criteria[0].checks, [Check::MaxTime(p.time_us * 1.1)]);
    let p = predicted(&large);
    assert_eq!(criteria[1].checks, [Check::MinBusbw(p.busbw_gbps * 0.9)]);
    // Pinned to its point.
    let s = &criteria[1].select;
    assert_eq!(
        (s.min_bytes, s.max_bytes, s.worlds.as_slice()),
        (8 << 30, 8 << 30, &[16][..])
    );
    assert_eq!(
        (s.nodes, s.dtypes.as_slice()),
        (Some(2), &[DType::BF16][..])
    );
    assert_eq!(
        criteria[1].name,
        "expect-h100-ib400 allreduce ring bf16 w16/2n 8 GiB"
    );
    assert!(notes[0].contains("1 points judged on busbw"), "{notes:?}");
    assert!(notes[0].contains("1 on time"), "{notes:?}");
}

#[test]
fn the_saturation_size_is_where_the_busbw_reaches_nine_tenths_of_its_peak() {
    let m = h100();
    let peak = predicted(&key(Op::AllGather, DType::BF16, 16, 2, ASYMPTOTE_BYTES)).busbw_gbps;
    let mut b = 1 << 10;
    while b <= 16 << 30 {
        let k = key(Op::AllGather, DType::BF16, 16, 2, b);
        let e = m.expected(&k).unwrap();
        assert_eq!(e.saturated, e.busbw_gbps >= 0.9 * peak, "{b}: {e:?}");
        assert!((e.busbw_gbps / predicted(&k).busbw_gbps - 1.0).abs() < 1e-9);
        b *= 4;
    }
}

#[test]
fn a_dtype_the_model_lacks_is_expected_from_another_and_gaps_are_said() {
    let m = h100();
    let f32 = m
        .expected(&key(Op::AllReduce, DType::F32, 16, 2, 1 << 30))
        .unwrap();
    let bf16 = m
        .expected(&key(Op::AllReduce, DType::BF16, 16, 2, 1 << 30))
        .unwrap();
    assert_eq!(f32, bf16);
    // No Broadcast model: no criterion, one note; a world of 1 is not judged at all.
    let keys = [
        key(Op::Broadcast, DType::BF16, 16, 2, 1 << 20),
        key(Op::Broadcast, DType::BF16, 16, 2, 2 << 20),
        key(Op::AllReduce, DType::BF16, 1, 1, 1 << 20),
    ];
    let (criteria, notes) = m.criteria(&keys, 0.1);
    assert!(criteria.is_empty(), "{criteria:?}");
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[1].contains("no model for broadcast"), "{notes:?}");
    assert!(notes[1].ends_with("not judged"), "{notes:?}");
}

#[test]
fn roots_of_one_point_share_one_criterion() {
    let mut a = key(Op::AllReduce, DType::BF16, 16, 2, 1 << 20);
    a.root = Some(0);
    let mut b = a.clone();
    b.root = Some(3);
    let (criteria, _) = h100().criteria(&[a, b], 0.1);
    assert_eq!(criteria.len(), 1);
}
