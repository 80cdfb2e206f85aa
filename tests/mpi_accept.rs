//! `collbench accept` of the MPI backend (cargo feature `mpi`): the real binary under `mpirun`
//! sweeps its criteria's repeats in one MPI session and rank 0 judges; outside mpirun it is
//! refused naming the launcher.
//!
//! Run with `cargo test --release --features mpi --test mpi_accept`; needs Open MPI's `mpirun`.

#![cfg(feature = "mpi")]

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mpirun::have_mpirun;
use common::{exe, Spawned};

const LIMIT: Duration = Duration::from_secs(240);

/// `[sweep]` criteria of the MPI backend, 2 ranks, AllReduce at 1-4 KiB.
const MPI_CRITERIA: &str = "[sweep]\nbackend = \"mpi\"\nop = \"allreduce\"\nmin_bytes = \"1K\"\n\
    max_bytes = \"4K\"\niters = 5\nwarmup = 1\n\
    [[criterion]]\nname = \"ok\"\nmax_wrong = 0\nmax_time_us = 1e6\nmax_rank_skew = 1e3\n";

#[test]
fn accept_sweeps_the_mpi_backend_under_mpirun_with_repeats_in_one_mpi_session() {
    if !have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let criteria = tmp.path().join("c.toml");
    std::fs::write(&criteria, MPI_CRITERIA).unwrap();
    let out = tmp.path().join("acc");
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "2", exe()])
        .args(["accept", "--repeat", "2", "--json", "--criteria"])
        .arg(&criteria)
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let r = Spawned::start(cmd).finish(Instant::now(), LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    // Only rank 0 judges: one verdict on stdout.
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("one verdict on stdout");
    assert_eq!(
        (v["repeats"].as_u64(), v["exit_code"].as_u64()),
        (Some(2), Some(0)),
        "{v}"
    );
    for i in [1, 2] {
        let dir = out.join(format!("repeat-{i}"));
        let m = common::meta(&dir);
        assert_eq!((m.backend.as_str(), m.ranks), ("mpi", 2), "{m:?}");
        let rows = common::summary(&dir);
        assert_eq!(rows.len(), 3, "1K, 2K and 4K in {}", dir.display());
        assert!(rows.iter().all(|p| p.wrong == 0 && p.key.world == 2));
    }
}

#[test]
fn accept_of_the_mpi_backend_outside_mpirun_names_the_launcher() {
    let tmp = tempfile::tempdir().unwrap();
    let criteria = tmp.path().join("c.toml");
    std::fs::write(&criteria, MPI_CRITERIA).unwrap();
    let out = tmp.path().join("acc");
    let r = common::run(
        &[
            "accept",
            "--criteria",
            criteria.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("mpirun -np N"), "{}", r.stderr);
    assert!(!out.exists(), "a refused accept created {}", out.display());
}
