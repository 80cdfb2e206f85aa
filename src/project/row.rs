//! One row of a projection (a world size and a layout, with its metrics) and what limits it:
//! the shape [`super::plan`] fills and [`super::scaling`] annotates.

use serde::Serialize;

use super::metrics::Metrics;

/// One (world, layout) of the projection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub world: usize,
    pub nodes: usize,
    pub tp: usize,
    pub pp: usize,
    pub dp: usize,
    /// Expert-parallel degree (1 for dense models).
    pub ep: usize,
    pub global_batch: usize,
    pub microbatches: usize,
    pub microbatch_size: usize,
    pub fits_memory: bool,
    pub memory_gb: f64,
    /// None when the layout does not fit in memory.
    pub metrics: Option<Metrics>,
    /// The highest total throughput at this world size.
    pub best: bool,
    /// (tokens/s − tokens/s of the same layout at the previous world size) / added GPUs.
    pub marginal_tokens_per_s_per_gpu: Option<f64>,
    /// The same between the best layouts of this and the previous world size (best rows only).
    pub marginal_best_tokens_per_s_per_gpu: Option<f64>,
    /// S(N): tokens/s over tokens/s of the same layout at its smallest projected world.
    pub speedup: Option<f64>,
    /// E(N) = T(1)/(N·T(N)): MFU / compute efficiency under the flat rule, compute time over
    /// step time under the roofline.
    pub parallel_eff: Option<f64>,
    /// SE(N) = E(N)/E(N₀) = S(N)·N₀/N.
    pub scaling_eff: Option<f64>,
    /// (exposed + overlapped communication) / compute.
    pub comm_compute_ratio: Option<f64>,
    pub bound: Bound,
    /// The model of pipeline transfers: `sendrecv` (the fit's SendRecv model) or
    /// `allgather-pair` (the AllGather model at p = 2); None with pp = 1.
    pub pp_p2p_model: Option<&'static str>,
    /// The model of MoE AllToAlls: `alltoall` (the fit's AllToAll model) or the pairwise
    /// schedule of point-to-point transfers (`pairwise-sendrecv`, `pairwise-allgather-pair`);
    /// None without any (dense model or ep = 1).
    pub alltoall_model: Option<&'static str>,
}

/// What limits a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Compute,
    Communication,
    Memory,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Communication => "communication",
            Bound::Memory => "memory",
        }
    }

    /// The table's short form.
    pub fn short(self) -> &'static str {
        match self {
            Bound::Compute => "comp",
            Bound::Communication => "comm",
            Bound::Memory => "mem",
        }
    }
}
