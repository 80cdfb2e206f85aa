//! Alpha-beta models fitted to sweep results (`collbench fit`).
//!
//! Pipeline: [`curves`] groups the points of results folders (read by
//! [`crate::report::run_reader`]) into curves of per-iteration samples; [`regress`] fits linear
//! models robustly on the relative scale; [`segments`] finds regime breaks within one curve;
//! [`forms`] defines the algorithm-shaped models that span world sizes (ring, tree, recursive
//! doubling, two-level); [`build`] runs them all and assembles a [`schema::FitFile`], the
//! `fit.json` that the projection reads and nothing else. [`predict`] answers "how long would
//! this call take" from a fit.json; [`export`] writes its network parameters for other tools
//! (ASTRA-sim, Calculon, NCCL's tuner).
//!
//! Everything but [`command`] (which reads the folders) and the writers is pure: numbers in,
//! numbers out.

pub mod args;
pub mod build;
pub mod command;
pub mod curves;
pub mod envelope;
pub mod export;
pub mod forms;
pub mod power;
pub mod predict;
pub mod profiles;
pub mod regress;
pub mod schema;
pub mod schema_check;
pub mod segments;
pub mod slowdowns;
pub mod table;
#[cfg(test)]
pub(crate) mod testrun;
