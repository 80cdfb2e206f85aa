//! `collbench project`: what a training step of a Llama-style model would take under FSDP
//! (optionally with tensor and pipeline parallelism) on a cluster whose collectives a fit.json
//! (or a bundled network profile in the same schema) describes.
//!
//! # The model, in one page (details in docs/METHODOLOGY.md, "Projection")
//!
//! - **Work.** Model FLOPs per token `6N + 12·L·h·s` (PaLM appendix B; N = parameters that take
//!   part in a matmul, [`model`]). Compute time is FLOPs at `compute_efficiency` × peak
//!   ([`hardware`]), split per FSDP unit: one per transformer layer, plus embedding and head
//!   ([`stage`]).
//! - **Layout.** `world = tp × pp × dp`, TP innermost, then DP, PP outermost, on nodes of
//!   `gpus_per_node` ([`layout`]). Each collective's group size and node count follow.
//! - **Communication.** Collective times come from the fit's models: the two-level model for a
//!   group across nodes, the intra-node model inside one ([`comm`]); of several NCCL protocols,
//!   auto when measured, else the fastest at each size ([`protocols`]). FSDP all-gathers each
//!   unit's parameters in forward (prefetching the next unit behind the current one's compute,
//!   no re-shard by default) and reduce-scatters its gradients in backward; the first
//!   AllGather and last ReduceScatter are exposed, and overlapped compute runs slower by
//!   `overlap_slowdown` ([`step`]). TP adds two blocking AllReduces of activations per layer in
//!   each direction; PP adds point-to-point transfers (the fit's SendRecv model, else the
//!   AllGather model at p = 2) and the bubble `(pp−1)/(m+pp−1)`.
//! - **Mixture of experts.** A MoE model (experts, top-k; [`model`]) with expert parallelism
//!   `ep` holds `E/ep` experts per GPU, gathers them over the ranks holding the same experts,
//!   and adds per layer a dispatch and a combine AllToAll in each direction, blocking, timed by
//!   the fit's AllToAll model ([`moe`], [`comm`]).
//! - **Memory.** Sharded AdamW states, gathered parameters, gradient buffers and activations
//!   (Korthikanti et al. 2022) against HBM; layouts that do not fit are reported, not projected
//!   ([`memory`]).
//! - **Output.** Step time split, tokens/s total and per GPU, MFU, exposed-communication
//!   fraction, power from busy/idle fractions, tokens per joule, marginal throughput per added
//!   GPU, best layout per world size ([`metrics`], [`plan`], [`output`]); speedup, parallel and
//!   scaling efficiency against the layout's smallest projected world, communication/compute
//!   ratio, bound class, critical scale ([`scaling`]) and the law `T(N) = a + b·N + c·ln N`
//!   with its held-out error ([`stepfit`]).
//!
//! Everything but [`specs`] (reading TOML and profiles) and [`command`] (printing, writing) is
//! pure and unit tested with hand-computed numbers.
//!
//! - **Replay** ([`replay`]). `--replay` runs one projected FSDP step (tp 1, pp 1, one node) on
//!   this machine's host backend: the same collectives, sizes and order, with compute stood in
//!   by wall-clock time, and prints measured against projected step time (replay.csv with
//!   `--out`).

pub mod anchors;
pub mod anchors_args;
pub mod anchors_fit;
pub mod args;
pub mod at_once;
pub mod auto;
pub mod calibrated;
pub mod calibration;
pub mod comm;
pub mod command;
pub mod hardware;
pub mod layout;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod moe;
pub mod output;
pub mod overlap;
pub mod overlap_sizes;
pub mod plan;
pub mod protocols;
pub mod replay;
pub mod roofline;
pub mod row;
pub mod scaling;
pub mod specs;
pub mod stage;
pub mod step;
mod step_passes;
pub mod stepfit;

#[cfg(test)]
mod auto_tests;
#[cfg(test)]
mod profile_tests;
