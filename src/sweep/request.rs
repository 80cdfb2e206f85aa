//! A sweep as the user asked for it, once its flags are parsed and checked
//! ([`crate::sweep::args`]): what every driver and `collbench accept` take.

use std::path::PathBuf;
use std::time::Duration;

use crate::model::call::BackendKind;
use crate::model::plan::SweepOptions;
use crate::model::topology::WorldSpec;

/// A sweep as the user asked for it.
pub struct SweepRequest {
    pub opts: SweepOptions,
    pub backend: BackendKind,
    pub timeout: Duration,
    pub out: Option<PathBuf>,
    /// Whether `--ranks` was given (a multi-host launch takes its world from the launcher).
    pub ranks_given: bool,
    /// `--world-sizes` as given (empty: the default).
    pub world_specs: Vec<WorldSpec>,
    /// `--pairs`: measure every node pair (multi-host launches only).
    pub pairs: bool,
    /// `--bisect`: find the slow node by halves (multi-host launches only).
    pub bisect: bool,
    /// The live table's format and whether a progress bar may be shown.
    pub view: crate::sweep::console::View,
    pub command_line: Vec<String>,
    /// `--proto` (NCCL protocols; empty for the other backends).
    pub protos: Vec<crate::collective::Proto>,
    /// `--cuda-graph` (NCCL only): time one CUDA-graph launch of the call per iteration.
    pub cuda_graph: bool,
    /// Launches of the loop's graph under `--cuda-graph` (nccl-tests `-G N`; 1 to 1000).
    pub graph_launches: usize,
    /// `--register`, `--cta-policy` and `--ctas` (NCCL only): the communicator axes.
    pub comm: crate::model::comm_setup::CommAxes,
}

impl SweepRequest {
    /// The flag of a mode that measures between nodes (`--pairs`, `--bisect`), if one is given:
    /// the host backend's multi-host launches only.
    pub fn node_mode(&self) -> Option<&'static str> {
        match (self.pairs, self.bisect) {
            (true, _) => Some("--pairs"),
            (false, true) => Some("--bisect"),
            (false, false) => None,
        }
    }
}
