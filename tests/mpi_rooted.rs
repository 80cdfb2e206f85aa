//! The rooted ops of the MPI backend (cargo feature `mpi`): Broadcast, Reduce, Gather and
//! Scatter from every root under the real `mpirun`, exact and recorded with their root.
//!
//! Run with `cargo test --release --features mpi --test mpi_rooted`; needs Open MPI's `mpirun`.

#![cfg(feature = "mpi")]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{tempdir, Run};

const LIMIT: Duration = Duration::from_secs(240);

fn mpirun(n: usize, out: &Path, args: &[&str]) -> Run {
    common::mpirun::sweep(n, out, args, LIMIT)
}

/// The rooted ops from every root (`--root all`) at 3 ranks, with Open MPI's linear and
/// binomial Gather and Scatter forced: every root's curve exact and recorded with its root.
#[test]
fn rooted_ops_are_exact_from_every_root() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    for (algo, number) in [("linear", "1"), ("binomial", "2"), ("auto", "")] {
        let (_tmp, out) = tempdir();
        let ops = if algo == "auto" {
            "broadcast,reduce,gather,scatter"
        } else {
            "gather,scatter"
        };
        let args = [
            "--op",
            ops,
            "--algo",
            algo,
            "--root",
            "all",
            "--dtype",
            "f32,bf16",
            "--in-place",
            "both",
            "-b",
            "48",
            "-e",
            "192K",
            "-f",
            "64",
            "--iters",
            "3",
            "--warmup",
            "1",
        ];
        let r = mpirun(3, &out, &args);
        assert_eq!(r.code(), 0, "{r:?}");
        let rows = common::summary(&out);
        let n_ops = ops.split(',').count();
        // ops x roots x dtypes x placements x sizes (48 B, 3 KiB, 192 KiB: the smallest holds
        // one 16-byte block per rank in f32 and bf16).
        assert_eq!(rows.len(), n_ops * 3 * 2 * 2 * 3, "{algo}");
        for root in 0..3 {
            let from_root = rows.iter().filter(|p| p.key.root == Some(root)).count();
            assert_eq!(from_root, n_ops * 2 * 2 * 3, "{algo} root {root}");
        }
        assert!(
            rows.iter()
                .all(|p| p.key.algo.name() == algo && p.wrong == 0),
            "{algo}"
        );
        if !number.is_empty() {
            let env = &common::meta(&out).options["mpi_env"];
            for name in ["gather", "scatter"] {
                assert_eq!(env[format!("OMPI_MCA_coll_tuned_{name}_algorithm")], number);
            }
        }
    }
}
