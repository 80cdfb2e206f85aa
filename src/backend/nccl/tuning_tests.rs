use super::*;
use crate::collective::{DType, Op, ReduceOp};
use crate::model::call::BackendKind;
use crate::model::plan::Bind;
use crate::model::plan::{SweepOptions, TransportKind};

fn opts(algos: &[Algo], world_sizes: &[usize]) -> SweepOptions {
    SweepOptions {
        ops: vec![Op::AllReduce, Op::Broadcast],
        algos: algos.to_vec(),
        dtypes: vec![DType::F32],
        redops: vec![ReduceOp::Sum],
        ranks: 8,
        world_sizes: world_sizes.to_vec(),
        sizes: vec![1024, 2048],
        in_place: vec![false, true],
        iters: Some(2),
        warmup: Some(1),
        bind: Bind::None,
        transport: TransportKind::Shm,
        shapes: Vec::new(),
        pairs: Vec::new(),
        root: Default::default(),
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
fn every_algo_and_proto_has_the_name_nccl_matches() {
    assert_eq!(algo_value(Algo::Ring), Some("Ring"));
    assert_eq!(algo_value(Algo::Tree), Some("Tree"));
    assert_eq!(algo_value(Algo::Nvls), Some("NVLS,NVLSTree"));
    assert_eq!(
        algo_value(Algo::CollNet),
        Some("CollNetDirect,CollNetChain")
    );
    assert_eq!(algo_value(Algo::Auto), None);
    assert_eq!(proto_value(Proto::Ll), Some("LL"));
    assert_eq!(proto_value(Proto::Ll128), Some("LL128"));
    assert_eq!(proto_value(Proto::Simple), Some("Simple"));
    assert_eq!(proto_value(Proto::Auto), None);
    // Every algorithm the nccl backend offers has a value or is auto.
    for op in Op::ALL {
        for &a in op.nccl_algos() {
            assert_eq!(algo_value(a).is_none(), a == Algo::Auto, "{op} {a}");
        }
    }
}

#[test]
fn auto_keeps_the_users_own_setting_and_forced_values_win() {
    let none = (None, None);
    assert_eq!(
        env_for(Algo::Tree, Proto::Ll128, &none),
        [
            ("NCCL_ALGO", Some("Tree".to_string())),
            ("NCCL_PROTO", Some("LL128".to_string()))
        ]
    );
    assert_eq!(
        env_for(Algo::Auto, Proto::Auto, &none),
        [("NCCL_ALGO", None), ("NCCL_PROTO", None)]
    );
    let user = (Some("^NVLS".to_string()), Some("Simple".to_string()));
    let vars = env_for(Algo::Auto, Proto::Ll, &user);
    assert_eq!(vars[0], ("NCCL_ALGO", Some("^NVLS".to_string())));
    assert_eq!(vars[1], ("NCCL_PROTO", Some("LL".to_string())));
}

#[test]
fn stages_group_points_by_combination_then_world_largest_first() {
    let o = opts(&[Algo::Ring, Algo::Tree], &[2, 8, 4]);
    let plan = o.plan_for(BackendKind::Nccl);
    let protos = [Proto::Ll, Proto::Simple];
    let st = stages(&plan.points, &protos, &[Default::default()]);
    // (ring, tree) x (ll, simple): tree has no broadcast, so its stages hold fewer points.
    let combos: Vec<(Algo, Proto)> = st.iter().map(|s| (s.algo, s.proto)).collect();
    assert_eq!(
        combos,
        [
            (Algo::Ring, Proto::Ll),
            (Algo::Ring, Proto::Simple),
            (Algo::Tree, Proto::Ll),
            (Algo::Tree, Proto::Simple)
        ]
    );
    for s in &st {
        let worlds: Vec<usize> = s.groups.iter().map(|g| g.0).collect();
        assert_eq!(worlds, [8, 4, 2], "{:?}", (s.algo, s.proto));
        for (w, points) in &s.groups {
            assert!(points
                .iter()
                .all(|p| p.world == *w && p.call.algo == s.algo));
        }
    }
    // ring: allreduce and broadcast, 2 sizes, 2 placements, per world: 8 points; tree: 4.
    assert_eq!(st[0].len(), 3 * 8);
    assert_eq!(st[2].len(), 3 * 4);
    // Every planned point is measured once per protocol.
    let total: usize = st.iter().map(Stage::len).sum();
    assert_eq!(total, plan.points.len() * protos.len());
}

#[test]
fn every_communicator_setup_is_outermost_and_measures_every_point() {
    use crate::model::call::Register;
    use crate::model::comm_setup::CommSetup;
    let plan = opts(&[Algo::Ring, Algo::Tree], &[4, 2]).plan_for(BackendKind::Nccl);
    let local = CommSetup {
        register: Some(Register::Local),
        ..Default::default()
    };
    let setups = [CommSetup::default(), local];
    let st = stages(&plan.points, &[Proto::Auto], &setups);
    let order: Vec<(Option<Register>, Algo)> =
        st.iter().map(|s| (s.setup.register, s.algo)).collect();
    assert_eq!(
        order,
        [
            (None, Algo::Ring),
            (None, Algo::Tree),
            (Some(Register::Local), Algo::Ring),
            (Some(Register::Local), Algo::Tree)
        ]
    );
    assert_eq!(st[0].groups, st[2].groups);
    let total: usize = st.iter().map(Stage::len).sum();
    assert_eq!(total, plan.points.len() * setups.len());
}

#[test]
fn stages_keep_plan_order_within_a_group() {
    let plan = opts(&[Algo::Auto], &[8]).plan_for(BackendKind::Nccl);
    let st = stages(&plan.points, &[Proto::Auto], &[Default::default()]);
    assert_eq!(st.len(), 1);
    assert_eq!(st[0].groups[0].1, plan.points);
}

#[test]
fn split_colours_members_and_leaves_the_rest_out() {
    assert_eq!(split_color(0, 4), 0);
    assert_eq!(split_color(3, 4), 0);
    assert_eq!(split_color(4, 4), -1);
    assert_eq!(split_color(7, 4), sys::NCCL_SPLIT_NOCOLOR);
}

#[test]
fn unique_ids_cross_the_store_byte_for_byte() {
    let mut raw = [0u8; 128];
    for (i, b) in raw.iter_mut().enumerate() {
        *b = (i * 37 + 255) as u8;
    }
    let id = UniqueId(raw);
    let bytes = encode_id(&id);
    assert_eq!(bytes.len(), 128);
    assert_eq!(decode_id("k", &bytes).unwrap(), id);
    let e = decode_id("nccl-id-3", &bytes[..127])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "store key 'nccl-id-3' holds 127 bytes, not a 128-byte NCCL unique id"
    );
}

#[test]
fn point_to_point_ops_are_measured_once_under_auto_and_never_force_nccl_algo() {
    let mut o = opts(&[Algo::Auto, Algo::Ring], &[4]);
    o.ops = vec![Op::AllReduce, Op::AllToAll, Op::SendRecv];
    let plan = o.plan_for(BackendKind::Nccl);
    // alltoall and sendrecv have auto only; in place they are not planned on nccl.
    let p2p = |p: &Point| p.call.op.nccl_point_to_point();
    assert!(plan
        .points
        .iter()
        .filter(|p| p2p(p))
        .all(|p| p.call.algo == Algo::Auto));
    assert!(plan.points.iter().filter(|p| p2p(p)).all(|p| !p.in_place));
    let n_p2p = plan.points.iter().filter(|p| p2p(p)).count();
    assert_eq!(n_p2p, 2 * 2, "two ops, two sizes, out of place");
    let protos = [Proto::Ll, Proto::Auto, Proto::Simple];
    let st = stages(&plan.points, &protos, &[Default::default()]);
    let none = (None, None);
    for s in &st {
        let points: Vec<&Point> = s.groups.iter().flat_map(|(_, p)| p.iter()).collect();
        let has_p2p = points.iter().any(|p| p2p(p));
        assert_eq!(
            has_p2p,
            (s.algo, s.proto) == (Algo::Auto, Proto::Auto),
            "{s:?}"
        );
        if has_p2p {
            // NCCL_ALGO stays as the user's environment has it (here unset).
            assert_eq!(env_for(s.algo, s.proto, &none)[0], ("NCCL_ALGO", None));
        }
        // Collectives are measured under every protocol.
        let ar = points.iter().filter(|p| p.call.op == Op::AllReduce).count();
        assert_eq!(ar, 2 * 2, "{:?}", (s.algo, s.proto));
    }
    let total: usize = st.iter().map(Stage::len).sum();
    assert_eq!(total, (plan.points.len() - n_p2p) * protos.len() + n_p2p);
    // Without auto among the protocols they are not measured at all.
    let st = stages(&plan.points, &[Proto::Ll128], &[Default::default()]);
    assert!(st
        .iter()
        .flat_map(|s| s.groups.iter().flat_map(|(_, p)| p.iter()))
        .all(|p| !p2p(p)));
}

#[test]
fn the_plan_says_why_point_to_point_ops_skip_forced_protocols() {
    let ops = [Op::AllReduce, Op::AllToAll, Op::SendRecv, Op::AllToAll];
    assert_eq!(protocol_note(&ops, &[Proto::Auto]), None);
    assert_eq!(protocol_note(&[Op::AllReduce], &[Proto::Ll]), None);
    let some = protocol_note(&ops, &[Proto::Ll, Proto::Auto]).unwrap();
    assert!(
        some.starts_with(
            "alltoall and sendrecv: measured with protocol auto only: \
             NCCL_PROTO does not apply to point-to-point calls"
        ),
        "{some}"
    );
    let none = protocol_note(&ops[1..2], &[Proto::Simple]).unwrap();
    assert!(
        none.starts_with("alltoall: NCCL_PROTO does not apply"),
        "{none}"
    );
    assert!(
        none.ends_with("measured with --proto auto only; skipped"),
        "{none}"
    );
    for p in Proto::ALL {
        assert!(measured_with(Op::AllReduce, *p));
        assert_eq!(measured_with(Op::SendRecv, *p), *p == Proto::Auto);
    }
}

#[test]
fn a_forced_choice_nccl_did_not_run_is_named_and_its_own_choices_are_not() {
    use crate::backend::nccl::profiler::Ran;
    let ran = |algo, proto| Ran {
        func: 4,
        count: 256,
        algo,
        proto,
    };
    // NCCL_ALGO_* / NCCL_PROTO_* indices: 0 tree, 1 ring, 4 nvls, 5 nvlstree; 0 LL, 2 Simple.
    assert_eq!(ignored(Algo::Ring, Proto::Simple, &ran(1, 2)), None);
    assert_eq!(ignored(Algo::Auto, Proto::Auto, &ran(0, 0)), None);
    assert_eq!(ignored(Algo::Nvls, Proto::Auto, &ran(5, 2)), None);
    let note = ignored(Algo::Ring, Proto::Auto, &ran(0, 2)).unwrap();
    assert!(
        note.starts_with("NCCL ran tree/simple where NCCL_ALGO=Ring NCCL_PROTO=(auto) was set"),
        "{note}"
    );
    assert!(ignored(Algo::Auto, Proto::Ll, &ran(1, 2)).is_some());
}
