//! Open MPI's `mpirun` for the MPI backend's tests.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{exe, Run, Spawned};

/// Variables by which an MPI library sees a launcher (beyond those `common` removes).
pub const PMI_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"];

/// Whether `mpirun` can be started; says SKIPPED (or fails where CI requires it) when not.
pub fn have_mpirun() -> bool {
    let ok = Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let missing = (!ok).then(|| "mpirun not found; install openmpi-bin".to_string());
    super::skip::can_use("mpirun", missing)
}

/// `mpirun -np n collbench sweep --backend mpi --no-progress --out <out> args...`, ended after
/// `limit` (a hang, not a speed).
pub fn sweep(n: usize, out: &Path, args: &[&str], limit: Duration) -> Run {
    sweep_with(n, out, args, &[], limit)
}

/// [`sweep`] with variables `env` set for every rank (`mpirun -x`).
pub fn sweep_with(
    n: usize,
    out: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> Run {
    let np = n.to_string();
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", &np]);
    for (k, v) in env {
        cmd.env(k, v).args(["-x", k]);
    }
    cmd.arg(exe())
        .args(["sweep", "--backend", "mpi", "--no-progress"])
        .arg("--out")
        .arg(out)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Spawned::start(cmd).finish(Instant::now(), limit)
}
