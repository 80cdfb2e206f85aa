//! NCCL backend (cargo feature `nccl`): libnccl loaded at run time by our own loader, the CUDA
//! driver probed before cudarc is used, every NCCL result code a typed error.
//!
//! * [`sys`]: NCCL's C types and function-pointer types (declarations only).
//! * [`loader`], [`cuda`]: the thin unsafe layer; every FFI call is made there.
//! * [`error`]: typed errors for result codes and for libraries that cannot be loaded.
//! * [`comm`]: the safe communicator, destroyed exactly once without panicking.
//! * [`map`]: dtype and reduction to NCCL enums. [`probe`]: what this machine lacks.
//! * [`telemetry`]: NVML power, clock, temperature and NVLink counters sampled per point.

pub mod calls;
pub mod comm;
pub mod cuda;
pub mod error;
pub mod loader;
pub mod map;
pub mod probe;
pub mod sys;
pub mod telemetry;

#[cfg(test)]
mod tests;
