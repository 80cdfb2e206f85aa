//! `collbench accept` on the command line (clap derive only).

use std::path::PathBuf;

use clap::Args;

use super::command::AcceptRequest;

/// `collbench accept`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
collbench accept --criteria bench-configs/acceptance/host-2ranks.toml\n  \
collbench accept --criteria bench-configs/acceptance/host-2ranks.toml --repeat 5 --junit junit.xml\n  \
collbench accept --criteria my.toml --run results/run-a --run results/run-b --json\n  \
collbench accept --expect h100-nvswitch --run results/run-a\n  \
collbench accept --expect fit.json --run results/run-b\n  \
collbench accept --baseline-from results/run-a --margin 0.15\n  \
collbench accept --expect ib-ndr-400 --nics 8 --margin 0.05 --run results/run-a --run results/run-b\n\n\
Exit codes: 0 every criterion passed, 1 some threshold was not met, 2 could not judge \
(bad criteria, a sweep failed, a criterion matched no measured point).")]
pub struct AcceptArgs {
    /// Criteria file (TOML): what to sweep and what every point must meet (docs/ACCEPTANCE.md);
    /// optional with --expect and --run.
    #[arg(long, value_name = "FILE", required_unless_present_any = ["expect", "baseline_from"])]
    pub criteria: Option<PathBuf>,
    /// Print a criteria file made from this known-good results folder (repeat the flag for
    /// repeats): its [sweep], a busbw floor where each curve saturates and a latency ceiling
    /// below, loosened by --margin. Nothing is judged.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["criteria", "expect", "runs"])]
    pub baseline_from: Vec<PathBuf>,
    /// Expected performance: a bundled busbw profile (h100-nvswitch, a100-nvswitch,
    /// a800-nvswitch, ib-edr-100, ib-hdr-200, ib-ndr-400, roce-200, roce-400, efa-100) or a
    /// profile file, every point past
    /// its saturation size reaching its busbw less --margin; or a model, a bundled network
    /// profile (v100-ib100, a100-ib200, h100-ib400) or a fit.json, every point judged against
    /// its expected busbw where the model's curve saturates and its expected time below
    /// (repeat the flag for several).
    #[arg(long, value_name = "PROFILE")]
    pub expect: Vec<String>,
    /// With --expect or --baseline-from: the share by which a threshold is loosened (0 to 0.9;
    /// 0.1 accepts 90% of a busbw and 110% of a time).
    #[arg(
        long,
        value_name = "F",
        default_value_t = 0.1,
        allow_negative_numbers = true
    )]
    pub margin: f64,
    /// With a per-NIC --expect profile (ib-*, roce-*, efa-100): the NICs of each node (1 to 64).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub nics: Option<u32>,
    /// Run the criteria's sweep N times; each criterion is judged on its `stat` across them.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with = "runs")]
    pub repeat: u32,
    /// Judge this existing results folder instead of sweeping; repeat the flag for repeats.
    #[arg(long = "run", value_name = "DIR")]
    pub runs: Vec<PathBuf>,
    /// Folder for the repeats' results, verdict.json and junit.xml
    /// [default: a new results/<date>-<time>-accept-<name>, -2, -3, ... when taken; with --run,
    /// none unless given].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write JUnit XML here [default: junit.xml in --out].
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print verdict.json on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Replace an existing verdict.json or JUnit file (outputs are never overwritten otherwise).
    #[arg(long)]
    pub force: bool,
}

impl AcceptArgs {
    /// The typed request.
    pub fn into_request(self, command_line: Vec<String>) -> AcceptRequest {
        AcceptRequest {
            criteria: self.criteria,
            expect: self.expect,
            baseline_from: self.baseline_from,
            margin: self.margin,
            nics: self.nics.map(|n| n as usize),
            repeat: self.repeat as usize,
            runs: self.runs,
            out: self.out,
            junit: self.junit,
            json: self.json,
            force: self.force,
            command_line,
        }
    }
}
