//! `collbench`: parse once, run, map the outcome to an exit code
//! (0 ok, 1 a check failed, 2 error, 130 interrupted).

use std::process::ExitCode;

use clap::Parser;
use collbench::cli::{Cli, Command};
use collbench::error::Error;
use collbench::launch::local::OPTIONS_ENV;
use collbench::sweep::distributed::run_distributed;
use collbench::sweep::rank::{rank_main, RankArgs};
use collbench::sweep::run::{run_sweep, Outcome, SweepRequest};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_error(e),
    };
    let result = match cli.command {
        Command::Sweep(args) => sweep(*args),
        Command::Fit(args) => collbench::fit::command::run_fit(&args.into_request()),
        Command::Project(args) => project(args),
        Command::Accept(args) => {
            collbench::accept::command::run_accept(&args.into_request(std::env::args().collect()))
        }
        Command::Compare(args) => args
            .into_request()
            .and_then(|r| collbench::compare::command::run_compare(&r)),
        Command::Plot(args) => args
            .into_request()
            .and_then(|r| collbench::plot::command::run_plot(&r)),
        Command::Report(args) => collbench::report::html::command::run_report(&args.into_request()),
        Command::Import(args) => args
            .into_request(std::env::args().collect())
            .and_then(|r| collbench::import::command::run_import(&r)),
        Command::Backends(args) => collbench::backend::list::run_backends(&args),
        Command::Rank(args) => rank(args),
    };
    match result {
        Ok(code) => match collbench::output::stdout::failure() {
            Some(line) => {
                eprintln!("collbench: {line}");
                ExitCode::from(2)
            }
            None => ExitCode::from(code),
        },
        Err(e) => {
            eprintln!("collbench: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}

/// Help and version go out as clap writes them; a usage error becomes one line on stderr, like
/// every other error, with clap's tips kept and its usage block left out.
fn clap_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    eprintln!("collbench: {}", one_line(&e.render().to_string()));
    ExitCode::from(2)
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

fn sweep(args: collbench::sweep::args::SweepArgs) -> Result<u8, Error> {
    let req = args.into_request(std::env::args().collect())?;
    if req.backend == collbench::backend::BackendKind::Mpi {
        return match sweep_mpi(&req)? {
            Some(outcome) => Ok(report_outcome(&outcome)),
            None => Ok(0),
        };
    }
    if req.backend == collbench::backend::BackendKind::Nccl {
        return sweep_nccl(&req);
    }
    // Started once per rank by mpirun, srun or torchrun: join the others; only rank 0 reports.
    let outcome = match collbench::launch::env::detect_process()? {
        Some(boot) if boot.world > 1 => match run_distributed(&req, &boot)? {
            Some(outcome) => outcome,
            None => return Ok(0),
        },
        _ => run_sweep(&req)?,
    };
    Ok(report_outcome(&outcome))
}

/// The MPI backend, in a build that has it.
#[cfg(feature = "mpi")]
fn sweep_mpi(req: &SweepRequest) -> Result<Option<Outcome>, Error> {
    collbench::backend::mpi::run_mpi(req)
}

/// A build without the MPI backend says how to get one.
#[cfg(not(feature = "mpi"))]
fn sweep_mpi(req: &SweepRequest) -> Result<Option<Outcome>, Error> {
    req.backend.availability().map_err(Error::Usage)?;
    Ok(None)
}

/// The NCCL backend, in a build that has it: rank 0 reports, the local launcher relays its
/// ranks' exit.
#[cfg(feature = "nccl")]
fn sweep_nccl(req: &SweepRequest) -> Result<u8, Error> {
    use collbench::backend::nccl::{run_sweep, NcclRun};
    Ok(match run_sweep(req)? {
        NcclRun::Lead(outcome) => report_outcome(&outcome),
        NcclRun::Follower => 0,
        NcclRun::Launcher(code) => code,
    })
}

/// A build without the NCCL backend says how to get one.
#[cfg(not(feature = "nccl"))]
fn sweep_nccl(req: &SweepRequest) -> Result<u8, Error> {
    req.backend.availability().map_err(Error::Usage)?;
    Ok(0)
}

/// Prints where the points went and maps wrong results to exit code 1.
fn report_outcome(outcome: &Outcome) -> u8 {
    eprintln!(
        "collbench: {} points written to {}",
        outcome.points,
        outcome.dir.display()
    );
    if outcome.wrong_points > 0 {
        eprintln!(
            "collbench: {} point(s) produced wrong results (column `wrong`)",
            outcome.wrong_points
        );
        return 1;
    }
    0
}

fn project(args: collbench::project::args::ProjectArgs) -> Result<u8, Error> {
    let req = args.into_request(std::env::args().collect())?;
    collbench::project::command::run_project(&req)
}

fn rank(args: collbench::sweep::args::RankCliArgs) -> Result<u8, Error> {
    let layout = collbench::backend::host::layout::Layout::decode(&args.layout)?;
    let rank_args = RankArgs {
        rank: args.rank,
        fd: args.fd,
        layout,
    };
    if let Ok(json) = std::env::var(collbench::project::replay::REPLAY_ENV) {
        let plan = serde_json::from_str(&json)
            .map_err(|e| Error::usage(format!("the replay plan is not valid: {e}")))?;
        return collbench::project::replay::rank::replay_rank_main(rank_args, &plan)
            .map_err(|e| Error::Rank(format!("rank {}: {e}", args.rank)));
    }
    let json = std::env::var(OPTIONS_ENV).map_err(|_| {
        Error::usage(format!(
            "{OPTIONS_ENV} is not set; ranks are started by `collbench sweep`"
        ))
    })?;
    let opts = serde_json::from_str(&json)
        .map_err(|e| Error::usage(format!("{OPTIONS_ENV} is not valid sweep options: {e}")))?;
    rank_main(rank_args, &opts).map_err(|e| Error::Rank(format!("rank {}: {e}", args.rank)))
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
