//! The MPI backend (cargo feature `mpi`): collbench started once per rank by `mpirun` (or
//! `srun`), every collective carried out by the MPI library through rsmpi on host buffers.
//!
//! World sizes are sub-communicators of the first `p` ranks, split once at the start. Each
//! point follows the host backend's protocol: warm-up calls, then per timed iteration a barrier
//! on the group's communicator and one timed call; then a call on fresh exact inputs whose
//! output is checked. Every rank's times and wrong count are gathered to world rank 0, which
//! summarises (slowest rank per iteration) and writes the point before the next one starts.

mod algo;
mod call;
mod interrupt;
mod raw;
mod sweep;

use crate::error::{Error, Result};
use crate::model::plan::SweepOptions;
use crate::model::topology::WorldSpec;
use crate::sweep::run::{Outcome, SweepRequest};

/// Environment variables that MPI launchers set in every process they start: Open MPI's
/// mpirun, PMI-1/PMI-2 launchers (MPICH's Hydra, srun --mpi=pmi2) and PMIx launchers.
const LAUNCHER_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"];

/// Whether this process was started by an MPI launcher, and if not, what to do.
pub fn availability() -> std::result::Result<(), String> {
    check_launcher(|k| std::env::var_os(k).is_some()).map_err(|e| e.to_string())
}

/// Runs this process's part of an MPI sweep. World rank 0 returns the outcome; the others
/// `None`.
pub fn run_mpi(req: &SweepRequest) -> Result<Option<Outcome>> {
    check_launcher(|k| std::env::var_os(k).is_some())?;
    check_request(req)?;
    let algo = algo::single(&req.opts.algos)?;
    let mca = algo::tuned_env(&req.opts.ops, algo);
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
    let handles = raw::Handles::new(&version);
    if req.opts.in_place.contains(&true) && handles.in_place.is_none() {
        return Err(raw::InPlace::unknown(&version));
    }
    let library = Library { version, mca };
    interrupt::install();
    // `universe` lives to the end of this function; dropping it finalises MPI.
    sweep::run(req, &universe.world(), &library, &handles)
}

/// What the results record about the library: its version, and the variables set for it.
pub(super) struct Library {
    pub version: String,
    pub mca: Vec<(String, String)>,
}

/// Refuses to start MPI outside a launcher: a lone process would measure a world of one.
fn check_launcher(is_set: impl Fn(&str) -> bool) -> Result<()> {
    if LAUNCHER_VARS.iter().any(|k| is_set(k)) {
        return Ok(());
    }
    Err(Error::usage(
        "--backend mpi needs an MPI launcher: start it with \
         `mpirun -np N collbench sweep --backend mpi ...` (or srun)",
    ))
}

/// What the MPI backend cannot measure yet, refused before MPI starts.
fn check_request(req: &SweepRequest) -> Result<()> {
    if req.pairs {
        return Err(Error::usage(
            "--pairs is measured by the host backend; drop --backend mpi",
        ));
    }
    if let Some(WorldSpec::Shape(s)) = req
        .world_specs
        .iter()
        .find(|w| matches!(w, WorldSpec::Shape(_)))
    {
        return Err(Error::usage(format!(
            "--world-sizes {s}: the mpi backend takes plain sizes (groups of the first ranks)"
        )));
    }
    Ok(())
}

/// The options of this launch: its world size, and the groups to measure.
fn resolve(req: &SweepRequest, size: usize) -> Result<SweepOptions> {
    if req.ranks_given && req.opts.ranks != size {
        return Err(Error::usage(format!(
            "--ranks {} but mpirun started {size} ranks; drop --ranks when mpirun starts collbench",
            req.opts.ranks
        )));
    }
    let mut opts = req.opts.clone();
    opts.ranks = size;
    opts.world_sizes = if req.world_specs.is_empty() {
        vec![size]
    } else {
        req.world_specs.iter().map(WorldSpec::world).collect()
    };
    opts.validate_for(req.backend)?;
    Ok(opts)
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
