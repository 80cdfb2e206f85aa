//! collbench measures collective communication the way training clusters use it.
//!
//! # Architecture
//!
//! Layers, bottom to top; a module uses only its own layer and those below (checked by
//! tests/architecture.rs; docs/ARCHITECTURE.md has the seams, the path of one point and where to
//! change what):
//!
//! ```text
//! cli          the subcommands and the one dispatch (Command::run)
//! commands     fit  project  compare  plot  accept  import  html  (cores + command.rs + args.rs)
//! sweep        args -> execute -> drivers: host (run, distributed, cluster), mpi, nccl;
//!              rank timing loop, summarize, watchdog, console
//! engines      launch (rank processes, launchers, TCP store)
//!              backend (executes calls: host transports and algorithms, MPI, NCCL)
//! results      output (atomic files, safe stdout)  meta  report (summary/samples/ranks CSV, RunDir)
//! vocabulary   collective (ops, sizes, busbw)  model (call, plan, topology, limits, point
//!              records)  named (one definition per named enum)  units  physical  stats
//!              check  error
//! ```
//!
//! A host sweep: `sweep::execute` -> `sweep::run` (launcher) spawns N `__rank` processes
//! (`sweep::rank`; a projection's replay spawns `__replay-rank` ones), which time
//! `backend::host::algo` over `transport::shm` (slot rings in one memfd segment, futex waits)
//! and leave their samples in the segment; after each point the launcher summarizes them and
//! `sweep::lead::Lead` appends the point to the results folder before the ranks go on.
//!
//! * [`collective`]: ops, algorithms, dtypes, nccl-tests size and busbw conventions.
//! * [`model`]: what a sweep measures (`SweepOptions` and its plan of points, the call each
//!   point makes, world shapes, the limits on numbers) and what a point produces (records).
//! * [`sweep`]: the flags, `execute`, the four drivers (local host launch, a rank of a
//!   launcher's world, MPI, NCCL), the rank-side timing protocol and the launcher's supervision
//!   (dead or stalled ranks, Ctrl-C).
//! * [`backend`]: what executes calls: the embedded host backend (shared memory or TCP between
//!   rank processes), MPI and NCCL behind cargo features.
//! * [`stats`], [`check`]: pure statistics and exact correctness checks.
//! * [`report`], [`meta`]: the versioned files of a results folder (docs/FORMATS.md).
//! * [`output`]: stdout that never panics; output files written atomically, kept unless `--force`.
//! * [`fit`], [`project`], [`accept`], [`compare`], [`plot`], [`import`], [`html`]: the commands.
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
pub mod digest;
pub mod error;
pub mod fit;
pub mod html;
pub mod import;
pub mod input;
pub mod launch;
pub mod meta;
pub mod model;
pub mod named;
pub mod output;
pub mod physical;
pub mod plot;
pub mod project;
pub mod report;
pub mod stats;
pub mod sweep;
pub mod units;

#[cfg(test)]
pub(crate) mod test_skip;
