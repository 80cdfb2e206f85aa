//! The MPI backend (cargo feature `mpi`): collbench started once per rank by `mpirun` (or
//! `srun`), every collective carried out by the MPI library through rsmpi on host buffers.
//!
//! This module starts MPI for a sweep's options ([`start`]: the forced algorithm's MCA
//! variables, the library check, the in-place and half-precision handles) and executes calls
//! ([`world`]: groups, one point's measurement, the payload sent to rank 0). The sweep that
//! walks the plan and writes the points is `crate::sweep::mpi`.

mod algo;
mod call;
pub mod progress;
mod raw;
mod together;
pub mod world;

pub use call::MpiBuffers;
pub use raw::Handles;

use crate::error::{Error, Result};
use crate::model::plan::SweepOptions;

/// Environment variables that MPI launchers set in every process they start: Open MPI's
/// mpirun, PMI-1/PMI-2 launchers (MPICH's Hydra, srun --mpi=pmi2) and PMIx launchers.
const LAUNCHER_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"];

/// Whether this process was started by an MPI launcher, and if not, what to do.
pub fn availability() -> std::result::Result<(), String> {
    check_launcher(|k| std::env::var_os(k).is_some()).map_err(|e| e.to_string())
}

/// MPI started for a sweep: the handles calls need, the library, and the universe (dropping
/// it finalises MPI).
pub struct Started {
    /// Declared first so that it drops first: its half-precision MPI_Ops must be freed before
    /// MPI_Finalize (fields drop in declaration order).
    pub handles: Handles,
    pub library: Library,
    pub universe: mpi::environment::Universe,
}

/// Starts MPI for `opts`: sets the MCA variables of its one forced algorithm, initialises MPI,
/// and refuses a library that cannot force it or cannot compute in place.
pub fn start(opts: &SweepOptions) -> Result<Started> {
    let algo = algo::single(&opts.algos)?;
    let mca = algo::tuned_env(&opts.ops, algo);
    for (k, v) in &mca {
        // Read by Open MPI in MPI_Init, just below; this process has no other thread yet.
        std::env::set_var(k, v);
    }
    let Some(universe) = mpi::initialize() else {
        return Err(Error::Rank(
            "MPI was already initialised in this process".into(),
        ));
    };
    let version = mpi::environment::library_version()
        .map(|v| {
            v.trim_matches(|c: char| c == '\0' || c.is_whitespace())
                .to_string()
        })
        .unwrap_or_else(|_| "unknown MPI library".into());
    algo::check_library(algo, &version)?;
    let handles = Handles::new(&version);
    if opts.in_place.contains(&true) && handles.in_place.is_none() {
        return Err(raw::InPlace::unknown(&version));
    }
    let library = Library { version, mca };
    Ok(Started {
        handles,
        library,
        universe,
    })
}

/// What the results record about the library: its version, and the variables set for it.
pub struct Library {
    pub version: String,
    pub mca: Vec<(String, String)>,
}

/// Refuses to start MPI outside a launcher: a lone process would measure a world of one.
pub fn check_launcher(is_set: impl Fn(&str) -> bool) -> Result<()> {
    if LAUNCHER_VARS.iter().any(|k| is_set(k)) {
        return Ok(());
    }
    Err(Error::usage(
        "--backend mpi needs an MPI launcher: start it with \
         `mpirun -np N collbench sweep --backend mpi ...` (or srun)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launcher_variable_is_required() {
        assert!(check_launcher(|_| false).is_err());
        assert!(check_launcher(|k| k == "OMPI_COMM_WORLD_SIZE").is_ok());
        assert!(check_launcher(|k| k == "PMI_SIZE").is_ok());
        let msg = check_launcher(|_| false).unwrap_err().to_string();
        assert!(msg.contains("mpirun -np N"), "{msg}");
    }
}
