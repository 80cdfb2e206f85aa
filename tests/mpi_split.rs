//! `collbench sweep --split` on the MPI backend (cargo feature `mpi`): the real binary under
//! `mpirun` at 4 ranks splits its world as nccl-tests does (`MPI_Comm_split` by the rule's
//! colour), measures each group's call alone and then every group's at once, exact, with the
//! slowdown and the aggregate worked out from the rows themselves, and reads nccl-tests'
//! `NCCL_TESTS_SPLIT` from the environment mpirun passes on.
//!
//! Run with `cargo test --release --features mpi --test mpi_split`; needs Open MPI's `mpirun`.

#![cfg(feature = "mpi")]

mod common;

use std::time::Duration;

use common::split::{check_size, global_ranks};
use common::{summary, tempdir};

const LIMIT: Duration = Duration::from_secs(240);

#[test]
fn mod_2_groups_run_alone_then_at_once_exact_with_global_ranks() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    #[rustfmt::skip]
    let args = ["--op", "allreduce,alltoall", "--split", "MOD 2", "-b", "1K", "-e", "64K",
        "-f", "8", "-n", "10", "-w", "1"];
    let r = common::mpirun::sweep(4, &out, &args, LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let points = summary(&out);
    // Two ops at 1K, 8K, 64K: two groups alone, then both at once.
    assert_eq!(points.len(), 2 * 3 * 4, "{points:?}");
    for rows in points.chunks(4) {
        let first = &rows[0].key;
        assert!(rows.iter().all(|r| r.key.backend == "mpi"
            && r.key.op == first.op
            && r.key.bytes == first.bytes
            && r.key.world == 2));
        check_size(rows, &["0 2", "1 3"], "split %2 of 4");
    }
    assert!(
        r.stdout.contains("group 1 3 with split %2 of 4: x"),
        "{}",
        r.stdout
    );
    // ranks.csv names each group's global ranks; the slowest rank is one of its group's.
    assert_eq!(global_ranks(&out, 1), ["1", "3"]);
    assert_eq!(global_ranks(&out, 3), ["1", "3"]);
    assert_eq!(global_ranks(&out, 2), ["0", "2"]);
    for (i, p) in points.iter().enumerate() {
        let odd = p.key.group.as_deref() == Some("1 3");
        assert_eq!(p.slowest_rank % 2, usize::from(odd), "row {i}: {p:?}");
    }
}

#[test]
fn nccl_tests_split_variable_through_mpirun_makes_consecutive_groups() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    #[rustfmt::skip]
    let args = ["--op", "reducescatter", "--in-place", "both", "-b", "4K", "-e", "4K", "-n", "10"];
    let env = [("NCCL_TESTS_SPLIT", "DIV 2")];
    let r = common::mpirun::sweep_with(4, &out, &args, &env, LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let points = summary(&out);
    assert_eq!(points.len(), 8, "{points:?}");
    for rows in points.chunks(4) {
        check_size(rows, &["0-1", "2-3"], "split /2 of 4");
    }
    assert!(!points[0].key.in_place && points[4].key.in_place);
}
