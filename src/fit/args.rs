//! `collbench fit`'s command line (clap derive), turned into a [`FitRequest`].

use clap::Args;
use std::path::PathBuf;

use crate::collective::Op;
use crate::fit::command::FitRequest;
use crate::fit::export::{ExportFormat, ExportOptions, ExportRequest};
use crate::named::one_of;

/// `collbench fit`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  collbench fit results/run-a results/run-b -o fit.json\n  \
collbench fit fit.json --predict op=allgather,algo=ring,world=64,bytes=1G\n  \
collbench fit bench-configs/profiles/h100-ib400.json --predict op=allreduce,world=16,nodes=2,bytes=256M --json\n  \
collbench fit fit.json --export astra-sim --export-out network.yml\n  \
collbench fit fit.json --export calculon --npus 1024 --nodes 128"
)]
pub struct FitArgs {
    /// Results folders of `collbench sweep` to fit, or one fit.json to predict from.
    #[arg(value_name = "RUN")]
    pub inputs: Vec<PathBuf>,
    /// Where to write the fit.
    #[arg(short = 'o', long = "output", default_value = "fit.json")]
    pub output: PathBuf,
    /// Predict one call: op=..,algo=..(ring),world=..,bytes=..[,nodes=..][,dtype=..][,proto=..]
    /// [,register=..][,cta_policy=..][,ctas=..] (the last three pick an NCCL communicator
    /// setup's model; without them, the library defaults').
    #[arg(long, value_name = "SPEC")]
    pub predict: Option<String>,
    /// Print the prediction as one JSON object (time_us, interval_us, busbw_gbps, ...).
    #[arg(long)]
    pub json: bool,
    /// Write the fitted network for another tool (docs/EXPORTS.md).
    #[arg(long, value_name = "FORMAT", conflicts_with = "predict",
          value_parser = one_of::<ExportFormat>())]
    pub export: Option<ExportFormat>,
    /// Where --export writes [default: stdout].
    #[arg(long, value_name = "FILE", requires = "export")]
    pub export_out: Option<PathBuf>,
    /// --export: the op whose model gives the link numbers [default: the first of allgather,
    /// reducescatter, allreduce with a ring or two-level model].
    #[arg(long, value_name = "OP", requires = "export",
          value_parser = one_of::<Op>())]
    pub export_op: Option<Op>,
    /// --export: ranks (NPUs) in all, 1 to 1048576 [default: the largest world fitted].
    #[arg(long, value_name = "N", requires = "export", value_parser = world_count)]
    pub npus: Option<usize>,
    /// --export: nodes the ranks span, 1 to 1048576 [default: 1, or as fitted for a two-level
    /// model].
    #[arg(long, value_name = "N", requires = "export", value_parser = world_count)]
    pub nodes: Option<usize>,
    /// Replace an existing -o or --export-out file (outputs are never overwritten otherwise).
    #[arg(long)]
    pub force: bool,
}

impl FitArgs {
    /// The typed request.
    pub fn into_request(self) -> FitRequest {
        FitRequest {
            inputs: self.inputs,
            output: self.output,
            predict: self.predict,
            json: self.json,
            export: self.export.map(|format| ExportRequest {
                format,
                opts: ExportOptions {
                    op: self.export_op,
                    npus: self.npus,
                    nodes: self.nodes,
                },
                out: self.export_out,
            }),
            force: self.force,
        }
    }
}

/// A count of ranks or nodes within [`crate::physical::WORLD`] (as sweeps and projections
/// bound worlds).
fn world_count(s: &str) -> std::result::Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a whole number"))?;
    crate::physical::WORLD.check_usize("count", n)
}
