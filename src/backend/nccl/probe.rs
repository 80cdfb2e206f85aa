//! What this machine lacks to run the NCCL backend: libcuda, a device, libnccl.

use std::path::PathBuf;

use super::cuda::{probe_driver, DriverInfo};
use super::error::{CudaError, LoadError};
use super::loader::{Nccl, Version};

/// The loaded NCCL library.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NcclInfo {
    pub path: PathBuf,
    pub version: Option<Version>,
    /// Its optional entry points ([`super::features::OPTIONAL`]).
    pub present: Vec<&'static str>,
}

/// The outcome of looking for the driver, a device and NCCL.
#[derive(Debug)]
pub struct Probe {
    pub driver: Result<DriverInfo, CudaError>,
    pub nccl: Result<NcclInfo, LoadError>,
}

impl Probe {
    /// Looks at this machine (honouring `COLLBENCH_CUDA_LIB` and `COLLBENCH_NCCL_LIB`).
    pub fn run() -> Probe {
        let nccl = Nccl::load().map(|lib| NcclInfo {
            path: lib.path.clone(),
            version: lib.version().ok(),
            present: lib.present.clone(),
        });
        Probe {
            driver: probe_driver(),
            nccl,
        }
    }

    /// One line naming everything missing, or `None` when nothing is.
    pub fn missing(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Err(e) = &self.driver {
            parts.push(e.to_string());
        }
        if let Err(e) = &self.nccl {
            parts.push(e.to_string());
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// What was found, e.g. "2 GPU(s) (driver for CUDA 12.4, libcuda.so.1), NCCL 2.21.5
    /// (libnccl.so.2; optional: ncclSend ncclRecv ...)".
    pub fn found(&self) -> String {
        let mut parts = Vec::new();
        if let Ok(d) = &self.driver {
            parts.push(format!(
                "{} GPU(s) (driver for CUDA {}, {})",
                d.devices,
                d.version_text(),
                d.path.display()
            ));
        }
        if let Ok(n) = &self.nccl {
            let v = n.version.map(|v| format!("NCCL {v}"));
            let profiler = match super::profiler::exported() {
                true => "profiler: in program",
                false => "profiler: not exported (nccl_algo/nccl_proto stay empty)",
            };
            parts.push(format!(
                "{} ({}; optional: {}; {profiler})",
                v.as_deref().unwrap_or("NCCL (version unknown)"),
                n.path.display(),
                super::features::describe(&n.present)
            ));
        }
        parts.join(", ")
    }
}

/// Whether `sweep --backend nccl` can run here; the error is one line for the user.
/// What was found is named too: a library found without a GPU says which one would be used.
pub fn availability() -> Result<(), String> {
    let probe = Probe::run();
    match (probe.missing(), probe.found()) {
        (None, _) => Ok(()),
        (Some(missing), found) if found.is_empty() => {
            Err(format!("the nccl backend cannot run here: {missing}"))
        }
        (Some(missing), found) => Err(format!(
            "the nccl backend cannot run here: {missing} (found: {found})"
        )),
    }
}

/// What `collbench backends` says when the backend can run: the GPUs and the library found.
pub fn found() -> String {
    Probe::run().found()
}
