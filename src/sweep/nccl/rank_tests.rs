//! The plan a rank checks before it touches a GPU: world sizes, stages, and what the
//! point-to-point ops skip.

use super::*;
use crate::collective::{Algo, Op, Proto};

fn request(args: &[&str]) -> SweepRequest {
    let mut full = vec!["collbench", "sweep", "--backend", "nccl"];
    full.extend_from_slice(args);
    let args = crate::sweep::args::parse_sweep_line(full).unwrap();
    args.into_request(vec![]).unwrap()
}

#[test]
fn plans_are_checked_against_the_launch_before_any_gpu_is_used() {
    let err = |r: &SweepRequest, world| match check_plan(r, world) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    let e = err(&request(&["--world-sizes", "16"]), 8);
    assert!(e.contains("world size 16"), "{e}");
    // Sizes below one element per rank leave nothing to measure.
    let r = request(&["--op", "allgather", "-b", "8", "-e", "16"]);
    let e = err(&r, 8);
    assert!(
        e.starts_with("nothing to measure: allgather f32 at world 8"),
        "{e}"
    );
    // Worlds default to the launch; one stage per (algorithm, protocol).
    let r = request(&[
        "--op",
        "allreduce",
        "--algo",
        "ring,tree",
        "--proto",
        "ll,simple",
    ]);
    let (opts, plan, stages) = check_plan(&r, 4).unwrap();
    assert_eq!((opts.ranks, opts.world_sizes.clone()), (4, vec![4]));
    assert_eq!(stages.len(), 4);
    assert_eq!(
        stages.iter().map(Stage::len).sum::<usize>(),
        2 * plan.points.len()
    );
}

#[test]
fn point_to_point_ops_take_auto_only_and_say_why() {
    // alltoall and sendrecv run under auto (their one algorithm and protocol), out of place.
    let r = request(&[
        "--op",
        "alltoall,sendrecv",
        "--in-place",
        "both",
        "-e",
        "64K",
    ]);
    let (_, plan, stages) = check_plan(&r, 4).unwrap();
    assert!(!plan.points.is_empty());
    assert!(plan
        .points
        .iter()
        .all(|p| !p.in_place && p.call.algo == Algo::Auto));
    assert_eq!(stages.len(), 1);
    assert!(plan
        .notes
        .iter()
        .any(|n| n.starts_with("alltoall in place")));
    // Forced protocols: measured once, under auto, with a note.
    let r = request(&[
        "--op",
        "allreduce,alltoall",
        "--proto",
        "ll,auto",
        "-e",
        "64K",
    ]);
    let (_, plan, stages) = check_plan(&r, 4).unwrap();
    let a2a = plan
        .points
        .iter()
        .filter(|p| p.call.op == Op::AllToAll)
        .count();
    let measured = |proto| {
        stages
            .iter()
            .filter(|s| s.proto == proto)
            .flat_map(stage_points)
            .filter(|p| p.call.op == Op::AllToAll)
            .count()
    };
    assert_eq!((measured(Proto::Ll), measured(Proto::Auto)), (0, a2a));
    assert!(plan
        .notes
        .last()
        .unwrap()
        .starts_with("alltoall: measured with protocol auto only"));
    // Only forced protocols, or only in place: nothing to measure, and the line says why.
    let e = |args: &[&str]| match check_plan(&request(args), 4) {
        Ok(_) => panic!("accepted {args:?}"),
        Err(e) => e.to_string(),
    };
    let text = e(&["--op", "sendrecv", "--proto", "simple"]);
    assert!(
        text.starts_with("nothing to measure: sendrecv: NCCL_PROTO does not apply"),
        "{text}"
    );
    let text = e(&["--op", "alltoall", "--in-place", "on"]);
    assert!(
        text.starts_with(
            "nothing to measure: alltoall in place is not measured on the nccl backend"
        ),
        "{text}"
    );
}

#[test]
fn fp8_avg_and_mulsum_at_world_1_are_left_out_with_a_note_and_run_from_2_ranks() {
    use crate::collective::{DType, ReduceOp};
    let args = [
        "--op",
        "allreduce,reduce",
        "--dtype",
        "f8e4m3,f8e5m2,bf16",
        "--redop",
        "sum,avg,mulsum",
        "-e",
        "64K",
    ];
    let (_, one, _) = check_plan(&request(&args), 1).unwrap();
    let left =
        |d: DType, r: ReduceOp| matches!(d, DType::F8E4M3 | DType::F8E5M2) && r != ReduceOp::Sum;
    assert!(!one.points.is_empty());
    for p in &one.points {
        assert!(!left(p.call.dtype, p.call.redop), "{}", p.describe());
    }
    assert!(one.points.iter().any(|p| p.call.redop == ReduceOp::Avg));
    let note = one.notes.iter().find(|n| n.contains("world 1")).unwrap();
    assert!(note.contains("ncclInvalidArgument"), "{note}");
    let (_, two, _) = check_plan(&request(&args), 2).unwrap();
    assert!(two.points.iter().any(|p| left(p.call.dtype, p.call.redop)));
    assert!(two.notes.iter().all(|n| !n.contains("world 1")));
    // Asked for only what world 1 refuses: nothing to measure, and why.
    let only = request(&["--op", "allreduce", "--dtype", "f8e4m3", "--redop", "avg"]);
    let e = match check_plan(&only, 1) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("f8e4m3 avg at world 1: NCCL's single-rank path"),
        "{e}"
    );
}
