//! nccl-tests' element types and reductions on the host backend, through the real binary and
//! real rank processes: every reduction the host runs (`--redop all`: sum, prod, max, min, avg)
//! over every reducing op and algorithm, in the 1- and 8-byte integer types and both fp8
//! formats, in and out of place, at 3 ranks (avg's 1/3 is rounded in every float type) and at
//! 4; every point must be exactly right, and every (dtype, reduction) pair must be measured.
//! The ops that only move data run the same types at 3 ranks (1-byte elements make the 16-byte
//! block rule cut 16 elements per rank).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use collbench::collective::{DType, ReduceOp};
use common::{summary, sweep_ok, tempdir};

const NEW_DTYPES: &str = "i8,u8,u32,i64,u64,f8e4m3,f8e5m2";
/// Generous: each launch takes a few seconds on an idle 2-core machine.
const LIMIT: Duration = Duration::from_secs(180);

/// Sweeps `ops` over [`NEW_DTYPES`] (and f16 and f32, for avg's rounded 1/p) with `redop`
/// at `ranks` ranks; returns the (dtype, redop) pairs measured, after checking every point.
fn launch(ops: &str, algos: &str, redop: &str, ranks: usize) -> BTreeSet<(DType, ReduceOp)> {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let dtypes = format!("{NEW_DTYPES},f16,f32");
    let ranks = ranks.to_string();
    #[rustfmt::skip]
    let args = [
        "--op", ops, "--algo", algos, "--dtype", &dtypes, "--redop", redop,
        "--in-place", "both", "--ranks", &ranks, "-b", "5", "-e", "70000", "-f", "7",
        "--iters", "2", "--warmup", "1", "--timeout", "30s",
    ];
    sweep_ok(&args, &out, LIMIT);
    let rows = summary(&out);
    assert!(!rows.is_empty());
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| r.wrong != 0)
        .map(|r| format!("{:?}: {} wrong", r.key, r.wrong))
        .collect();
    assert!(bad.is_empty(), "wrong results:\n{}", bad.join("\n"));
    rows.iter().map(|r| (r.key.dtype, r.key.redop)).collect()
}

/// Every (dtype, reduction) pair of `dtypes` × `redops`.
fn pairs(redops: &[ReduceOp]) -> BTreeSet<(DType, ReduceOp)> {
    let dtypes = format!("{NEW_DTYPES},f16,f32");
    let dtypes: Vec<DType> = dtypes.split(',').map(|d| d.parse().unwrap()).collect();
    let all = dtypes
        .iter()
        .flat_map(|&d| redops.iter().map(move |&r| (d, r)));
    all.collect()
}

#[test]
fn every_host_reduction_is_exact_in_the_new_types_at_3_and_4_ranks() {
    let host = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Avg,
    ];
    for ranks in [3, 4] {
        let measured = launch(
            "allreduce,reducescatter,reduce",
            "ring,tree,recursive-doubling",
            "all",
            ranks,
        );
        assert_eq!(measured, pairs(&host), "at {ranks} ranks");
    }
}

#[test]
fn data_movement_is_exact_in_the_new_types() {
    let measured = launch(
        "allgather,alltoall,gather,scatter,broadcast,sendrecv",
        "ring,pairwise,binomial,tree,direct",
        "avg",
        3,
    );
    // Ops that move data are recorded with sum, which they never apply.
    assert_eq!(measured, pairs(&[ReduceOp::Sum]));
}
