//! `collbench report` flags (clap derive), kept beside the module so that src/cli.rs only
//! names the subcommand.

use std::path::PathBuf;

use clap::Args;

use super::command::ReportRequest;

/// `collbench report`.
#[derive(Args, Debug)]
#[command(
    about = "Write one self-contained HTML page of a results folder (figures, tables, fit, verdict)",
    after_help = "Examples:\n  \
collbench report results/run                          # writes results/run/report.html\n  \
collbench report results/run --fit fit.json --verdict verdict.json -o ticket-1234.html\n\n\
Without --fit the page fits the run on the fly (as collbench fit would, nothing written)."
)]
pub struct ReportArgs {
    /// The results folder of `collbench sweep`.
    #[arg(value_name = "RUN")]
    pub run: PathBuf,
    /// A fit.json to show (and to draw over the points) instead of fitting on the fly.
    #[arg(long, value_name = "FILE")]
    pub fit: Option<PathBuf>,
    /// A verdict.json of `collbench accept` to show.
    #[arg(long, value_name = "FILE")]
    pub verdict: Option<PathBuf>,
    /// Where to write the page [default: RUN/report.html].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace an existing page (outputs are never overwritten otherwise).
    #[arg(long)]
    pub force: bool,
}

impl ReportArgs {
    /// The typed request.
    pub fn into_request(self) -> ReportRequest {
        ReportRequest {
            run: self.run,
            fit: self.fit,
            verdict: self.verdict,
            output: self.output,
            force: self.force,
        }
    }
}
