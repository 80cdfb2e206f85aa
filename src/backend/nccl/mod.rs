//! NCCL backend (cargo feature `nccl`): libnccl loaded at run time by our own loader, the CUDA
//! driver probed before cudarc is used, every NCCL result code a typed error, one rank process
//! per GPU.
//!
//! * [`sys`]: NCCL's C types and function-pointer types (declarations only).
//! * [`loader`], [`cuda`], [`calls`]: the thin unsafe layer; every FFI call into NCCL is made
//!   there. `ncclCommSplit` (2.18+), `ncclGetLastError` (2.13+) and `ncclSend`/`ncclRecv`
//!   (2.7+, AllToAll and SendRecv only) are optional.
//! * [`p2p`]: AllToAll and SendRecv as the list of `ncclSend`/`ncclRecv` calls each rank
//!   groups, as nccl-tests issues them (plain data; [`calls`] issues the list).
//! * [`profiler`]: collbench as NCCL's profiler plugin, which tells the algorithm and protocol
//!   NCCL ran for each collective.
//! * [`error`]: typed errors for result codes and for libraries that cannot be loaded.
//! * [`search`]: the pip-installed NCCL of the `python3` on PATH, where PyTorch users have it;
//!   [`features`]: the oldest NCCL supported and the optional entry points of later ones.
//! * [`config`]: the communicators' `ncclConfig_t`, as nccl-tests makes it.
//! * [`comm`]: the safe communicator: destroyed once, aborted when dropped on a failure path.
//! * [`map`]: dtype and reduction to NCCL enums. [`probe`]: what this machine lacks.
//! * [`telemetry`]: NVML power, clock, temperature and NVLink counters sampled per point;
//!   [`point_telemetry`] wraps it around each point of the sweep and gathers it to rank 0.
//! * [`tuning`]: `NCCL_ALGO`/`NCCL_PROTO` per (algorithm, protocol), the order of points,
//!   split colours, the unique id through the store.
//! * [`gpu`], [`measure`]: the rank's device through cudarc's driver layer; one point's warm-up,
//!   event-timed iterations and correctness check.
//! * [`cublas`], [`gemm`]: `--with-compute gemm`, cuBLAS loaded by our own loader (cudarc's
//!   module panics where it is missing) and its BF16 GEMMs on a second stream beside the calls.
//!
//! NCCL's own time estimate of each collective point (`ncclGroupSimulateEnd`, NCCL 2.22+) is
//! recorded beside the measurement. [`graph`]: `--cuda-graph`, each iteration one launch of a
//! CUDA graph holding the captured call ([`placement`]: where that call reads and writes).
//!
//! The rank program that walks the plan, the launcher that starts the ranks and rank 0's side
//! of each point are the sweep's: `crate::sweep::nccl`.

pub mod calls;
pub mod comm;
pub mod config;
pub mod cublas;
pub mod cuda;
pub mod enqueue;
pub mod error;
pub mod features;
pub mod gemm;
pub mod gpu;
pub mod graph;
pub mod launcher;
pub mod lifecycle;
pub mod loader;
pub mod map;
pub mod measure;
pub mod memory;
pub mod p2p;
pub mod placement;
pub mod point_telemetry;
pub mod premul;
pub mod probe;
pub mod profiler;
pub mod search;
pub mod sys;
pub mod telemetry;
pub mod tuning;

#[cfg(test)]
mod tests;
