//! `collbench sweep --concurrent` on the MPI backend (cargo feature `mpi`): the real binary under
//! `mpirun` at 4 ranks runs different collectives on overlapping groups at once (an AllReduce
//! in each pair of neighbours beside an AllGather over every other rank), each group's call
//! also alone, every row exact, with the slowdown and the aggregate worked out from the rows
//! themselves; what it cannot run is refused in one line.
//!
//! Run with `cargo test --release --features mpi --test mpi_concurrent`; needs Open MPI's
//! `mpirun`.

#![cfg(feature = "mpi")]

mod common;

use std::time::Duration;

use common::split::{check_pairs_beside_every_other, check_point_set, global_ranks};
use common::{summary, tempdir};

const LIMIT: Duration = Duration::from_secs(240);

#[test]
fn allreduce_in_pairs_beside_allgather_across_them_exact_both_placements() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    #[rustfmt::skip]
    let args = ["--concurrent", "allreduce@/2,allgather@%2", "--dtype", "f32,bf16",
        "--in-place", "both", "-b", "1K", "-e", "64K", "-f", "64", "-n", "10", "-w", "1"];
    let r = common::mpirun::sweep(4, &out, &args, LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    // 2 dtypes x 2 placements x 2 sizes, each 4 groups alone and 4 at once.
    check_pairs_beside_every_other("mpi", &summary(&out));
    assert!(
        r.stdout
            .contains("group 1 3 with allreduce@/2 + allgather@%2 of 4: x"),
        "{}",
        r.stdout
    );
    // ranks.csv names each group's global ranks: the at-once point's rows in call order.
    assert_eq!(global_ranks(&out, 3), ["1", "3"]);
    assert_eq!(global_ranks(&out, 5), ["2", "3"]);
    assert_eq!(global_ranks(&out, 6), ["0", "2"]);
    let meta = std::fs::read_to_string(out.join("meta.json")).unwrap();
    assert!(meta.contains("\"concurrent\""), "{meta}");
}

#[test]
fn rooted_calls_at_once_take_one_root_inside_every_group_in_every_cycle() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    #[rustfmt::skip]
    let args = ["--concurrent", "broadcast@%2,reduce@/2", "--root", "1", "-b", "4K", "-e", "4K",
        "-n", "5", "--cycles", "2"];
    let r = common::mpirun::sweep(4, &out, &args, LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let expected = [
        ("broadcast", "0 2"),
        ("broadcast", "1 3"),
        ("reduce", "0-1"),
        ("reduce", "2-3"),
    ];
    let points = summary(&out);
    assert_eq!(points.len(), 16, "{points:?}");
    // Each soak cycle measures the set again, every row of it in its cycle.
    for (cycle, rows) in points.chunks(8).enumerate() {
        check_point_set("mpi", rows, &expected, "broadcast@%2 + reduce@/2 of 4");
        assert!(rows.iter().all(|p| p.cycle == cycle as u64), "{rows:?}");
    }
    assert!(points.iter().all(|p| p.key.root == Some(1)), "{points:?}");
}

#[test]
fn entries_of_one_rule_run_at_once_each_on_its_own_communicator() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    // An AllReduce and an AllGather on the same pairs restart in different orders on different
    // ranks: on one communicator their calls would cross.
    #[rustfmt::skip]
    let args = ["--concurrent", "allreduce@/2,allgather@/2,reducescatter@%2", "-b", "64K",
        "-e", "64K", "-n", "30"];
    let r = common::mpirun::sweep(4, &out, &args, LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let expected = [
        ("allreduce", "0-1"),
        ("allreduce", "2-3"),
        ("allgather", "0-1"),
        ("allgather", "2-3"),
        ("reducescatter", "0 2"),
        ("reducescatter", "1 3"),
    ];
    let label = "allreduce@/2 + allgather@/2 + reducescatter@%2 of 4";
    check_point_set("mpi", &summary(&out), &expected, label);
}

#[test]
fn what_cannot_run_at_once_is_refused_in_one_line() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    for (args, says) in [
        (
            &["--concurrent", "broadcast@%2,reduce@/2", "--root", "all"][..],
            "--root all and --concurrent",
        ),
        (
            &["--concurrent", "broadcast@%2,reduce@/2", "--root", "2"][..],
            "--root 2 is not a rank of the 1-rank groups broadcast runs in at world 2",
        ),
        (
            &["--concurrent", "allreduce@%2,allgather@/2", "--split", "%2"][..],
            "measured one at a time",
        ),
    ] {
        let r = common::mpirun::sweep(2, &out, args, LIMIT);
        assert_eq!(r.code(), 2, "{args:?}: {r:?}");
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
    assert!(!out.join("summary.csv").exists());
}
