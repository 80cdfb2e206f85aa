//! Backends carry out collective calls. Every backend produces the same records, so everything
//! downstream (summary, fit, accept) never cares which one ran.

pub mod buffers;
pub mod host;
pub mod list;
#[cfg(feature = "mpi")]
pub mod mpi;
#[cfg(feature = "nccl")]
pub mod nccl;

use crate::model::call::BackendKind;

impl BackendKind {
    /// Whether this build can run the backend, and if not, what to do about it.
    pub fn availability(self) -> Result<(), String> {
        match self {
            BackendKind::Host => Ok(()),
            BackendKind::Mpi => mpi_availability(),
            BackendKind::Nccl => nccl_availability(),
        }
    }

    /// For a backend that records GPU telemetry, one line on whether it can here.
    pub fn telemetry(self) -> Option<String> {
        match self {
            BackendKind::Nccl => nccl_telemetry(),
            BackendKind::Host | BackendKind::Mpi => None,
        }
    }

    /// Whether this build includes the backend (its cargo feature was enabled).
    pub fn built(self) -> bool {
        match self {
            BackendKind::Host => true,
            BackendKind::Mpi => cfg!(feature = "mpi"),
            BackendKind::Nccl => cfg!(feature = "nccl"),
        }
    }
}

#[cfg(feature = "mpi")]
fn mpi_availability() -> Result<(), String> {
    mpi::availability()
}

#[cfg(not(feature = "mpi"))]
fn mpi_availability() -> Result<(), String> {
    Err("this build has no MPI backend; rebuild with \
         `cargo build --release --features mpi` (needs Open MPI and libclang) and start it with \
         `mpirun -np N collbench sweep --backend mpi`"
        .into())
}

#[cfg(feature = "nccl")]
fn nccl_availability() -> Result<(), String> {
    nccl::probe::availability()
}

/// The GPUs and NCCL found, for `collbench backends`.
#[cfg(feature = "nccl")]
pub(crate) fn nccl_found() -> String {
    nccl::probe::found()
}

#[cfg(not(feature = "nccl"))]
pub(crate) fn nccl_found() -> String {
    String::new()
}

#[cfg(not(feature = "nccl"))]
fn nccl_availability() -> Result<(), String> {
    Err("this build has no NCCL backend; rebuild with \
         `cargo build --release --features nccl`"
        .into())
}

#[cfg(feature = "nccl")]
fn nccl_telemetry() -> Option<String> {
    Some(nccl::telemetry::status_line())
}

#[cfg(not(feature = "nccl"))]
fn nccl_telemetry() -> Option<String> {
    None
}
