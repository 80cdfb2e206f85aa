//! One collective call as the sweep hands it to a backend, and the backends collbench knows of.
//! Plain data: what a backend can do on this machine (availability, telemetry) is asked of
//! `crate::backend`, which adds those methods to [`BackendKind`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::collective::{Algo, DType, Op, ReduceOp, Shape};
use crate::error::Error;

/// One collective call as the sweep describes it to a backend.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub op: Op,
    pub algo: Algo,
    pub dtype: DType,
    pub redop: ReduceOp,
    pub shape: Shape,
}

/// The backends collbench knows of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Embedded: rank processes over shared memory.
    Host,
    /// MPI library through rsmpi (cargo feature `mpi`).
    Mpi,
    /// NCCL on GPUs (cargo feature `nccl`).
    Nccl,
}

impl BackendKind {
    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Host => "host",
            BackendKind::Mpi => "mpi",
            BackendKind::Nccl => "nccl",
        }
    }

    /// The algorithms the backend offers for `op`.
    pub fn algos(self, op: crate::collective::Op) -> &'static [Algo] {
        match self {
            BackendKind::Mpi => op.mpi_algos(),
            BackendKind::Nccl => op.nccl_algos(),
            BackendKind::Host => op.host_algos(),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "host" => Ok(BackendKind::Host),
            "mpi" => Ok(BackendKind::Mpi),
            "nccl" => Ok(BackendKind::Nccl),
            _ => Err(Error::usage(format!(
                "unknown backend '{s}'; valid values: host, mpi, nccl"
            ))),
        }
    }
}
