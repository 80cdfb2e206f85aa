//! The table of subcommands (clap derive). Each command's flags live beside the command
//! (`sweep::args`, `fit::args`, `project::args`, ...) and are parsed once into its typed request.

use clap::{Parser, Subcommand};

use crate::collective::Op;
use crate::error::{Error, Result};
use crate::fit::args::FitArgs;
use crate::model::call::BackendKind;
use crate::named::names;
use crate::sweep::args::{RankCliArgs, SweepArgs};
use crate::sweep::execute::{execute, report};

/// The command line: one subcommand.
#[derive(Parser, Debug)]
#[command(name = "collbench", version, about = about(), long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What `collbench --help` says first, from the definitions of the ops and backends.
pub fn about() -> String {
    format!(
        "Benchmarks collective communication ({}) between real rank processes on the {} \
         backends, with nccl-tests size and bus-bandwidth conventions; fits alpha-beta models, \
         projects training steps and judges clusters against criteria.",
        names::<Op>().join(", "),
        and_list(&names::<BackendKind>()),
    )
}

/// "a, b and c".
fn and_list(items: &[&str]) -> String {
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => items.join(""),
    }
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Measure collectives over message sizes and world sizes; write a results folder.
    #[command(after_long_help = crate::sweep::nccl_flags::refused_help())]
    Sweep(Box<SweepArgs>),
    /// Fit alpha-beta models to results folders (writes fit.json), or predict from a fit.json.
    Fit(FitArgs),
    /// Project FSDP (+TP/PP/EP) training steps from a fit.json or a bundled network profile.
    Project(crate::project::args::ProjectArgs),
    /// Project published training runs (bench-configs/anchors.toml) and show how far off each is.
    Anchors(crate::project::anchors_args::AnchorsArgs),
    /// Judge sweeps against acceptance criteria: table, verdict.json, JUnit XML; exit 0/1/2.
    Accept(crate::accept::args::AcceptArgs),
    /// Compare two results folders point by point; exit 1 on a regression beyond --threshold.
    Compare(crate::compare::args::CompareArgs),
    /// Draw figures (PNG, SVG) of results folders, a fit.json and a projection.
    Plot(crate::plot::args::PlotArgs),
    /// Write one self-contained HTML page of a results folder (figures, tables, fit, verdict).
    Report(crate::html::args::ReportArgs),
    /// Turn nccl-tests or OSU logs into results folders that every other command reads.
    Import(crate::import::args::ImportArgs),
    /// List the backends: built into this binary? runnable here? if not, why.
    Backends(crate::backend::list::BackendsArgs),
    /// Internal: one rank process of a local sweep.
    #[command(name = "__rank", hide = true)]
    Rank(RankCliArgs),
    /// Internal: one rank process of a projection's replay (`project --replay`).
    #[command(name = "__replay-rank", hide = true)]
    ReplayRank(RankCliArgs),
}

impl Command {
    /// Runs the command; `Ok` carries its exit code (0 ok, 1 a check or verdict failed).
    pub fn run(self) -> Result<u8> {
        let argv = || std::env::args().collect::<Vec<String>>();
        match self {
            Command::Sweep(args) => Ok(report(&execute(&args.into_request(argv())?)?)),
            Command::Fit(args) => crate::fit::command::run_fit(&args.into_request()),
            Command::Project(args) => {
                crate::project::command::run_project(&args.into_request(argv())?)
            }
            Command::Anchors(args) => crate::project::anchors_args::run_anchors(&args),
            Command::Accept(args) => crate::accept::command::run_accept(&args.into_request(argv())),
            Command::Compare(args) => crate::compare::command::run_compare(&args.into_request()?),
            Command::Plot(args) => crate::plot::command::run_plot(&args.into_request()?),
            Command::Report(args) => crate::html::command::run_report(&args.into_request()),
            Command::Import(args) => {
                crate::import::command::run_import(&args.into_request(argv())?)
            }
            Command::Backends(args) => crate::backend::list::run_backends(&args),
            Command::Rank(args) => sweep_rank(args),
            Command::ReplayRank(args) => replay_rank(args),
        }
    }
}

/// How long a rank other than 0 waits before it exits on an error that rank 0 says for all.
const RANK0_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The exit code of a command's outcome, its error (or a failed stdout) printed as one line:
/// the code it returned, 2 for an error or an unwritable stdout, 130 when interrupted.
pub fn exit_code(outcome: Result<u8>) -> u8 {
    match outcome {
        Ok(code) => match crate::output::stdout::failure() {
            Some(line) => {
                crate::say!("collbench: {line}");
                2
            }
            None => code,
        },
        Err(e) => {
            match e {
                // As for a refused command line: mpirun aborts the job at the first rank that
                // exits non-zero, and may kill rank 0 before its line is forwarded.
                Error::SaidByRank0(_) => std::thread::sleep(RANK0_GRACE),
                _ => crate::say!("collbench: {e}"),
            }
            e.exit_code() as u8
        }
    }
}

/// Help and version go out as clap writes them; a usage error becomes one line on stderr, like
/// every other error, with clap's tips kept and its usage block left out.
pub fn usage_error(e: clap::Error) -> u8 {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    // Every rank of an mpirun job or srun step got the same command line and refuses it alike:
    // rank 0's line says it once (the launcher printed one copy per rank). Other launchers may
    // start ranks by hand, each with a line of its own: every rank says its own there.
    if crate::launch::env::uniform_launch_rank().is_some_and(|r| r > 0) {
        // mpirun aborts the job at the first rank that exits non-zero and may kill rank 0
        // before its line is forwarded: the others give it a moment (bounded) first.
        std::thread::sleep(RANK0_GRACE);
        return 2;
    }
    crate::say!("collbench: {}", one_line(&e.render().to_string()));
    2
}

/// The message and tips of a rendered clap error on one line.
fn one_line(text: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        parts.push(line.strip_prefix("error: ").unwrap_or(line));
    }
    let mut msg = parts.join("; ");
    msg.push_str("; see --help");
    msg
}

/// The segment a rank process was handed, and how errors of this rank read.
fn rank_args(args: &RankCliArgs) -> Result<crate::sweep::rank::RankArgs> {
    Ok(crate::sweep::rank::RankArgs {
        rank: args.rank,
        fd: args.fd,
        layout: crate::backend::host::layout::Layout::decode(&args.layout)?,
    })
}

/// A JSON document a launcher handed its ranks through the environment variable `var`.
fn handed<T: serde::de::DeserializeOwned>(var: &str, what: &str) -> Result<T> {
    let json = crate::launch::handoff::received(var)?.ok_or_else(|| {
        Error::usage(format!(
            "{var} is not set; these rank processes are started by collbench itself ({what})"
        ))
    })?;
    serde_json::from_str(&json).map_err(|e| Error::usage(format!("{var} is not valid: {e}")))
}

/// The hidden `__rank`: one rank process of a local sweep.
fn sweep_rank(args: RankCliArgs) -> Result<u8> {
    use crate::launch::local::OPTIONS_ENV;
    let opts = handed(OPTIONS_ENV, "`collbench sweep`")?;
    let in_rank = |e: Error| Error::Rank(format!("rank {}: {e}", args.rank));
    crate::sweep::rank::rank_main(rank_args(&args)?, &opts).map_err(in_rank)
}

/// The hidden `__replay-rank`: one rank process of a projection's replay.
fn replay_rank(args: RankCliArgs) -> Result<u8> {
    use crate::project::replay::{rank::replay_rank_main, REPLAY_ENV};
    let plan = handed(REPLAY_ENV, "`collbench project --replay`")?;
    let in_rank = |e: Error| Error::Rank(format!("rank {}: {e}", args.rank));
    replay_rank_main(rank_args(&args)?, &plan).map_err(in_rank)
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn clap_errors_fold_to_one_line() {
        let text = "error: unexpected argument '--opp' found\n\n  tip: a similar argument exists: '--op'\n\nUsage: collbench sweep --op <OP>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(text),
            "unexpected argument '--opp' found; tip: a similar argument exists: '--op'; see --help"
        );
    }
}
