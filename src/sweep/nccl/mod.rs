//! The NCCL sweep (cargo feature `nccl`), one rank process per GPU; every call is executed by
//! `crate::backend::nccl`.
//!
//! * [`context`]: who a rank is, how it reaches the others, what it does with its error.
//! * [`plan`]: what a launch measures (options, plan, stages), checked before any GPU.
//! * [`rank`]: the rank program, the same on every rank whoever started it.
//! * [`bootstrap`]: `COLLBENCH_NCCL_BOOTSTRAP_ONLY=1`, the ranks' bootstrap rehearsed without a
//!   GPU (unique id through the store, `ncclCommInitRank`).
//! * [`launch`]: who starts the ranks (collbench on one node; mpirun, srun or torchrun across
//!   nodes).
//! * [`results`]: rank 0's side of a point (the slowest-rank rule, the point written).
//! * [`supervise`]: the local launcher's watch over its ranks (their errors, Ctrl-C, a results
//!   folder left running).

pub mod bootstrap;
pub mod context;
pub mod launch;
pub mod plan;
pub mod rank;
pub mod results;
pub mod setup;
pub mod splits;
pub mod supervise;

use crate::backend::nccl::probe;
use crate::error::{Error, Result};
use crate::model::topology::WorldSpec;
use crate::sweep::request::SweepRequest;

pub use launch::NcclRun;

/// `collbench sweep --backend nccl`: refuses what it cannot do (one line, exit 2), then runs
/// this process's part.
pub fn run_sweep(req: &SweepRequest) -> Result<NcclRun> {
    let probe = probe::Probe::run();
    if bootstrap::only() {
        // No GPU is opened: only the library must be there; one rank per requested rank.
        if let Err(e) = &probe.nccl {
            return Err(Error::Usage(format!(
                "the nccl backend cannot run here: {e}"
            )));
        }
        check_request(req)?;
        return launch::run_nccl(req, req.opts.ranks.max(1));
    }
    if let Some(missing) = probe.missing() {
        return Err(Error::Usage(format!(
            "the nccl backend cannot run here: {missing}"
        )));
    }
    check_request(req)?;
    let devices = probe
        .driver
        .as_ref()
        .map_or(0, |d| d.devices.max(0) as usize);
    launch::run_nccl(req, devices)
}

/// What the nccl backend does not measure, refused before any GPU is touched.
pub fn check_request(req: &SweepRequest) -> Result<()> {
    if let Some(flag) = req.node_mode() {
        return Err(Error::usage(format!(
            "{flag} is measured by the host backend; drop --backend nccl"
        )));
    }
    if let Some(s) = req.world_specs.iter().find_map(|w| match w {
        WorldSpec::Shape(s) => Some(s),
        _ => None,
    }) {
        return Err(Error::usage(format!(
            "--world-sizes {s}: the nccl backend takes plain sizes (groups of the first ranks)"
        )));
    }
    Ok(())
}
