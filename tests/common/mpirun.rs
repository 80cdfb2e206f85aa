//! Open MPI's `mpirun` for the MPI backend's tests.

use std::process::{Command, Stdio};

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
