//! NCCL backend (cargo feature `nccl`): libnccl loaded at run time by our own loader, the CUDA
//! driver probed before cudarc is used, every NCCL result code a typed error, one rank process
//! per GPU.
//!
//! * [`sys`]: NCCL's C types and function-pointer types (declarations only).
//! * [`loader`], [`cuda`], [`calls`]: the thin unsafe layer; every FFI call into NCCL is made
//!   there. `ncclCommSplit` (2.18+) and `ncclGetLastError` (2.13+) are optional.
//! * [`error`]: typed errors for result codes and for libraries that cannot be loaded.
//! * [`comm`]: the safe communicator: destroyed once, aborted when dropped on a failure path.
//! * [`map`]: dtype and reduction to NCCL enums. [`probe`]: what this machine lacks.
//! * [`telemetry`]: NVML power, clock, temperature and NVLink counters sampled per point;
//!   [`point_telemetry`] wraps it around each point of the sweep and gathers it to rank 0.
//! * [`tuning`]: `NCCL_ALGO`/`NCCL_PROTO` per (algorithm, protocol), the order of points,
//!   split colours, the unique id through the store.
//! * [`gpu`], [`measure`]: the rank's device through cudarc's driver layer; one point's warm-up,
//!   event-timed iterations and correctness check.
//! * [`sweep`]: the rank program. [`launch`]: who starts the ranks (collbench on one node;
//!   mpirun, srun or torchrun across nodes).
//!
//! NCCL's own time estimate of each point (`ncclGroupSimulateEnd`, NCCL 2.22+) is recorded
//! beside the measurement. [`graph`]: `--cuda-graph`, each iteration one launch of a CUDA graph
//! holding the captured call ([`placement`]: where that call reads and writes; [`results`]:
//! rank 0's side of a point).

pub mod calls;
pub mod comm;
pub mod cuda;
pub mod error;
pub mod gpu;
pub mod graph;
pub mod launch;
pub mod loader;
pub mod map;
pub mod measure;
pub mod placement;
pub mod point_telemetry;
pub mod probe;
pub mod results;
pub mod sweep;
pub mod sys;
pub mod telemetry;
pub mod tuning;

#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use crate::model::topology::WorldSpec;
use crate::sweep::run::SweepRequest;

pub use launch::NcclRun;

/// `collbench sweep --backend nccl`: refuses what it cannot do (one line, exit 2), then runs
/// this process's part.
pub fn run_sweep(req: &SweepRequest) -> Result<NcclRun> {
    let probe = probe::Probe::run();
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
    if req.pairs {
        return Err(Error::usage(
            "--pairs is measured by the host backend; drop --backend nccl",
        ));
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
