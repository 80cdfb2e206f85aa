//! collbench measures collective communication the way training clusters use it.
//!
//! # Architecture
//!
//! ```text
//! cli ──► sweep::run (launcher) ──spawns──► N × sweep::rank (one OS process per rank)
//!              │   reads samples from the            │  backend::host: algo (ring, tree)
//!              │   shared segment after each point   │     over transport::shm (slot rings
//!              ▼                                     │     in one memfd segment), futex waits
//!         report::* (summary.csv, samples.csv, ranks.csv, meta.json) + live table
//! ```
//!
//! * [`collective`]: ops, algorithms, dtypes, nccl-tests size and busbw conventions.
//! * [`sweep`]: the plan of points, the rank-side timing protocol, the launcher's supervision
//!   (dead or stalled ranks, Ctrl-C), and the per-point records.
//! * [`backend`]: the embedded host backend (shared memory between rank processes).
//! * [`stats`], [`check`]: pure statistics and exact correctness checks.
//! * [`report`], [`meta`]: the versioned files of a results folder (docs/FORMATS.md).
//! * [`output`]: stdout that never panics; output files written atomically, kept unless `--force`.
//! * [`project`]: FSDP (+TP/PP) training-step projection from a fit.json or network profile.
//!
//! The method (timing protocol, busbw derivation) is in docs/METHODOLOGY.md.

// Commands print through `output::stdout`: `println!` panics on a closed or full stdout.
#![cfg_attr(not(test), warn(clippy::print_stdout))]

pub mod accept;
pub mod backend;
pub mod check;
pub mod cli;
pub mod collective;
pub mod compare;
pub mod error;
pub mod fit;
pub mod import;
pub mod launch;
pub mod meta;
pub mod output;
pub mod physical;
pub mod plot;
pub mod project;
pub mod report;
pub mod stats;
pub mod sweep;
pub mod units;
