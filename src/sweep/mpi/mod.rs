//! The MPI sweep (cargo feature `mpi`): collbench started once per rank by `mpirun` (or
//! `srun`), every collective carried out by the MPI library through `crate::backend::mpi`.
//!
//! World sizes are sub-communicators of the first `p` ranks, split once at the start. Each
//! point follows the host backend's protocol: warm-up calls, then per timed iteration a barrier
//! on the group's communicator and one timed call; then a call on fresh exact inputs whose
//! output is checked. Every rank's times and wrong count are gathered to world rank 0, which
//! summarises (slowest rank per iteration) and writes the point before the next one starts.

mod interrupt;
mod lead;
mod stall;

use mpi::traits::Communicator;

use crate::backend::mpi::{check_launcher, start};
use crate::error::{Error, Result};
use crate::model::plan::SweepOptions;
use crate::model::topology::WorldSpec;
use crate::sweep::lead::Outcome;
use crate::sweep::request::SweepRequest;

/// Runs this process's part of an MPI sweep. World rank 0 returns the outcome; the others
/// `None`.
pub fn run_mpi(req: &SweepRequest) -> Result<Option<Outcome>> {
    let mut outcomes = run_mpi_each(std::slice::from_ref(req), |_| {})?;
    Ok(outcomes.pop().flatten())
}

/// Runs the requests in turn in one MPI session (a process can initialise MPI only once, so
/// `accept`'s repeats share it); `before(i)` is called as request `i` starts. The requests must
/// measure the same options (one forced algorithm's MCA variables are set before MPI starts).
pub fn run_mpi_each(
    reqs: &[SweepRequest],
    mut before: impl FnMut(usize),
) -> Result<Vec<Option<Outcome>>> {
    check_launcher(|k| std::env::var_os(k).is_some())?;
    let Some(first) = reqs.first() else {
        return Ok(Vec::new());
    };
    for r in reqs {
        check_request(r)?;
        if r.opts != first.opts {
            return Err(Error::usage(
                "one MPI launch measures one set of sweep options; start mpirun once per set",
            ));
        }
    }
    let mpi = start(&first.opts)?;
    interrupt::install();
    let world = mpi.universe.world();
    let ranks = stall::gather(&world);
    stall::start(first.timeout, world.rank() as usize, ranks);
    let run = |(i, r): (usize, &SweepRequest)| {
        before(i);
        lead::run(r, &world, &mpi.library, &mpi.handles)
    };
    // `mpi.universe` lives to the end of this function; dropping it finalises MPI.
    reqs.iter().enumerate().map(run).collect()
}

/// What the MPI backend cannot measure yet, refused before MPI starts.
fn check_request(req: &SweepRequest) -> Result<()> {
    if let Some(flag) = req.node_mode() {
        return Err(Error::usage(format!(
            "{flag} is measured by the host backend; drop --backend mpi"
        )));
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
