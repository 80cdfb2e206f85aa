//! The table of subcommands (clap derive). Each command's flags live beside the command
//! (`sweep::args`, `fit::args`, `project::args`, ...) and are parsed once into its typed request.

use clap::{Parser, Subcommand};

use crate::fit::args::FitArgs;
use crate::sweep::args::{RankCliArgs, SweepArgs};

/// Benchmarks collective communication (AllReduce, AllGather, ReduceScatter) between real rank
/// processes, with nccl-tests size and bus-bandwidth conventions.
#[derive(Parser, Debug)]
#[command(name = "collbench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure collectives over message sizes and world sizes; write a results folder.
    Sweep(Box<SweepArgs>),
    /// Fit alpha-beta models to results folders (writes fit.json), or predict from a fit.json.
    Fit(FitArgs),
    /// Project FSDP (+TP/PP) training steps from a fit.json or a bundled network profile.
    Project(crate::project::args::ProjectArgs),
    /// Judge sweeps against acceptance criteria: table, verdict.json, JUnit XML; exit 0/1/2.
    Accept(crate::accept::args::AcceptArgs),
    /// Compare two results folders point by point; exit 1 on a regression beyond --threshold.
    Compare(crate::compare::args::CompareArgs),
    /// Draw figures (PNG, SVG) of results folders, a fit.json and a projection.
    Plot(crate::plot::args::PlotArgs),
    /// Write one self-contained HTML page of a results folder (figures, tables, fit, verdict).
    Report(crate::report::html::args::ReportArgs),
    /// Turn nccl-tests or OSU logs into results folders that every other command reads.
    Import(crate::import::args::ImportArgs),
    /// List the backends (host, mpi, nccl): built into this binary? runnable here? if not, why.
    Backends(crate::backend::list::BackendsArgs),
    /// Internal: one rank process of a local launch.
    #[command(name = "__rank", hide = true)]
    Rank(RankCliArgs),
}
