//! Plans with calls beside others: `--split`, `--with-compute`, `--concurrent`.

use super::*;

#[test]
fn a_split_measures_each_group_alone_then_all_at_once() {
    let mut o = opts();
    (o.ops, o.algos, o.world_sizes, o.sizes) = (
        vec![Op::AllReduce],
        vec![Algo::Ring],
        vec![4, 3],
        vec![64, 1024],
    );
    o.split = Some("MOD 2".parse().unwrap());
    let plan = o.plan();
    // World 4: groups 0 2 and 1 3 of 2 ranks; world 3 makes groups of 2 and 1: skipped.
    assert_eq!(plan.points.len(), 2 * 3);
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("groups of 2, 1 ranks of world 3")),
        "{:?}",
        plan.notes
    );
    let keys: Vec<(usize, Option<String>, Option<String>)> = (plan.points.iter())
        .flat_map(|p| {
            let running = p.split.as_ref().unwrap().running();
            running.into_iter().map(|i| {
                let k = p.group_key("host", i);
                (k.bytes, k.group, k.concurrent)
            })
        })
        .collect();
    let g = |t: &str| Some(t.to_string());
    let split = g("split %2 of 4");
    assert_eq!(
        keys[..4],
        [
            (64, g("0 2"), None),
            (64, g("1 3"), None),
            (64, g("0 2"), split.clone()),
            (64, g("1 3"), split),
        ]
    );
    let p = &plan.points[0];
    assert_eq!((p.world, p.call.shape.bytes), (2, 64));
    assert!(p.runs_on(2) && !p.runs_on(1) && plan.points[2].runs_on(1));
    assert!(plan.points[2]
        .describe()
        .ends_with(", 2 groups at once (split %2 of 4)"));
    // MPI and NCCL worlds run their groups too; the host's multi-host launches refuse.
    assert!(o.validate_for(BackendKind::Mpi).is_ok());
    assert!(o.validate_for(BackendKind::Nccl).is_ok());
    let mut hosts = o.clone();
    hosts.shapes = vec![crate::model::topology::WorldShape {
        nodes: 2,
        per_node: 2,
    }];
    let e = hosts.validate().unwrap_err().to_string();
    assert!(e.starts_with("--split %2 runs on the host backend"), "{e}");
    assert!(e.contains("the nccl backend without --pairs"), "{e}");
    o.root = Roots::Rank(2);
    o.ops = vec![Op::Broadcast];
    let e = o.validate().unwrap_err().to_string();
    assert!(
        e.contains("--root 2 is not a rank of the 2-rank group"),
        "{e}"
    );
}

#[test]
fn a_compute_load_runs_on_the_host_launcher_alone_and_not_beside_a_split() {
    let mut o = opts();
    o.with_compute = Some(ComputeKind::Memory);
    assert!(o.validate().is_ok());
    let plan = o.plan();
    assert!(plan.points.chunks(2).all(|p| p[0].compute.is_none()
        && p[1].compute == Some(ComputeKind::Memory)
        && p[1].key("host").concurrent.as_deref() == Some("compute memory")));
    let e = o.validate_for(BackendKind::Nccl).unwrap_err().to_string();
    assert!(
        e.starts_with("--with-compute memory is a host load")
            && e.contains("use --with-compute gemm"),
        "{e}"
    );
    let e = o.validate_for(BackendKind::Mpi).unwrap_err().to_string();
    assert!(
        e.starts_with("--with-compute memory runs on the host"),
        "{e}"
    );
    o.split = Some("%2".parse().unwrap());
    let e = o.validate().unwrap_err().to_string();
    assert!(e.contains("measured one at a time"), "{e}");
}

#[test]
fn the_gemm_load_runs_on_the_nccl_backend_planned_as_the_hosts() {
    let mut o = opts();
    o.with_compute = Some(ComputeKind::Gemm);
    assert!(o.validate_for(BackendKind::Nccl).is_ok());
    let e = o.validate().unwrap_err().to_string();
    assert!(e.contains("runs on the nccl backend"), "{e}");
    let plan = o.plan_for(BackendKind::Nccl);
    assert!(plan.points.chunks(2).all(|p| p[0].compute.is_none()
        && p[1].key("nccl").concurrent.as_deref() == Some("compute gemm")));
}

#[test]
fn concurrent_calls_follow_every_group_alone_and_run_on_mpi_and_one_host() {
    let mut o = opts();
    (o.algos, o.world_sizes, o.sizes) = (vec![Algo::Auto], vec![4, 3], vec![64, 1024]);
    o.concurrent = Some("allreduce@/2,allgather@%2".parse().unwrap());
    assert!(o.validate_for(BackendKind::Mpi).is_ok());
    let plan = o.plan_for(BackendKind::Mpi);
    // World 4: 2 + 2 groups alone, then the calls at once, per size; world 3 is uneven.
    assert_eq!(plan.points.len(), 2 * 5, "{:?}", plan.notes);
    assert!(plan.notes.iter().any(|n| n.contains("world 3 skipped")));
    let together = &plan.points[4];
    let rows: Vec<(usize, String, String, Option<String>)> = (together.rows("mpi").into_iter())
        .map(|(i, members, k)| (i, format!("{members:?}"), k.op.to_string(), k.concurrent))
        .collect();
    let label = Some("allreduce@/2 + allgather@%2 of 4".to_string());
    let row = |i, m: &str, op: &str| (i, m.to_string(), op.to_string(), label.clone());
    assert_eq!(
        rows,
        [
            row(0, "[0, 1]", "allreduce"),
            row(0, "[2, 3]", "allreduce"),
            row(1, "[0, 2]", "allgather"),
            row(1, "[1, 3]", "allgather"),
        ]
    );
    assert_eq!(together.calls().len(), 2);
    assert!(together
        .describe()
        .ends_with("at once with the other calls of allreduce@/2 + allgather@%2 of 4"));
    let alone = &plan.points[3];
    assert_eq!(alone.calls().len(), 1);
    assert_eq!(alone.rows("mpi")[0].2.concurrent, None);
    assert!(
        alone.describe().ends_with("group 1 3 alone"),
        "{}",
        alone.describe()
    );
    // Every call of a point runs as many iterations: the largest call's.
    assert!(together.calls().iter().all(|c| c.iters == together.iters));
    let host = SweepOptions {
        algos: vec![Algo::Ring],
        ..o.clone()
    };
    assert!(host.validate_for(BackendKind::Host).is_ok());
    let e = o.validate_for(BackendKind::Nccl).unwrap_err().to_string();
    assert!(
        e.starts_with("--concurrent runs on the mpi backend and the host"),
        "{e}"
    );
    let mut across = o.clone();
    across.shapes = vec![crate::model::topology::WorldShape {
        nodes: 2,
        per_node: 2,
    }];
    let e = across
        .validate_for(BackendKind::Host)
        .unwrap_err()
        .to_string();
    assert!(e.contains("in a launch of one host"), "{e}");
    o.with_compute = Some(ComputeKind::Cache);
    let e = o.validate_for(BackendKind::Mpi).unwrap_err().to_string();
    assert!(
        e.contains("--with-compute cache are measured one at a time"),
        "{e}"
    );
}
