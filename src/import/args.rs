//! `collbench import` flags (clap derive) and their parsing into an [`ImportRequest`].

use std::path::PathBuf;

use clap::Args;

use super::convert::Overrides;
use super::log::Tool;
use super::request::{ImportRequest, Source};
use crate::collective::{Algo, DType, Proto};
use crate::error::{Error, Result};

/// `collbench import`.
#[derive(Args, Debug)]
#[command(
    about = "Turn nccl-tests or OSU logs into results folders (fit, accept, compare, plot, report)",
    after_help = "Examples:\n  \
collbench import nccl-tests all_reduce_perf.log              # -> results/import-...\n  \
collbench import nccl-tests logs/ --out results/cluster-a    # one folder per run inside\n  \
collbench import nccl-tests run.json                         # what nccl-tests -J wrote\n  \
collbench import nccl-tests ar-ring.log --algo ring --proto simple  # NCCL_ALGO/NCCL_PROTO were set\n  \
collbench import osu osu_allreduce.txt --world 64 --nodes 2\n  \
collbench import nccl-inspector nccl-inspector-1234/ --dtype bf16  # a job's NCCL Inspector logs\n\n\
Each run in the logs (a test from its header to its footer) becomes one results folder: \
--out itself when there is one run, else one folder per run inside --out. nccl-tests \
prints one average time per size, no per-iteration samples: the folder says so \
(meta.json `import`), and `fit` weighs each size as one observation. Exit codes: 0 \
imported, 2 a file that is not a log (named, with the line) or bad flags."
)]
pub struct ImportArgs {
    /// The tool that wrote the logs: nccl-tests, osu or nccl-inspector (NCCL Inspector's
    /// per-process logs of a job, read together: one folder per communicator and collective).
    #[arg(value_name = "TOOL")]
    pub tool: String,
    /// Log files, or folders to read every file of.
    #[arg(value_name = "LOG", required = true)]
    pub logs: Vec<PathBuf>,
    /// The results folder (one run) or the folder for one results folder per run [default:
    /// results/import-<file>-<n>-<op>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The test, where the log does not name it: a nccl-tests binary (all_reduce_perf) or an
    /// OSU collective (allreduce).
    #[arg(long, value_name = "NAME")]
    pub test: Option<String>,
    /// The NCCL algorithm the runs were forced to (NCCL_ALGO), when the log does not say:
    /// ring, tree, nvls, collnet [default: from NCCL's INFO lines, else auto].
    #[arg(long, value_name = "ALGO")]
    pub algo: Option<String>,
    /// The NCCL protocol (NCCL_PROTO) when the log does not say: ll, ll128, simple [default:
    /// from NCCL's INFO lines, else auto].
    #[arg(long, value_name = "PROTO")]
    pub proto: Option<String>,
    /// Ranks, for logs without a rank list (OSU).
    #[arg(long, value_name = "N")]
    pub world: Option<usize>,
    /// Hosts the ranks spanned, for logs without a rank list (OSU) [default: 1].
    #[arg(long, value_name = "N")]
    pub nodes: Option<usize>,
    /// The element type of an NCCL Inspector job's collectives, which its logs do not record
    /// (nccl-inspector only, and needed there): bf16, f32, ...
    #[arg(long, value_name = "TYPE")]
    pub dtype: Option<String>,
}

impl ImportArgs {
    /// The typed request; `command_line` is recorded in each folder's meta.json.
    pub fn into_request(self, command_line: Vec<String>) -> Result<ImportRequest> {
        let source = match self.tool.as_str() {
            "nccl-tests" | "nccl_tests" | "nccltests" => Source::Log(Tool::NcclTests),
            "osu" => Source::Log(Tool::Osu),
            "nccl-inspector" | "inspector" => Source::Inspector,
            other => {
                return Err(Error::usage(format!(
                    "unknown tool '{other}'; `collbench import` reads nccl-tests, osu or \
                     nccl-inspector logs"
                )))
            }
        };
        let dtype = match (source, self.dtype.as_deref()) {
            (Source::Inspector, Some(d)) => Some(d.parse::<DType>()?),
            (Source::Inspector, None) => {
                return Err(Error::usage(
                    "NCCL Inspector records no element type: give the job's --dtype (bf16 for \
                     most training jobs' gradients, f32, ...)",
                ))
            }
            (_, Some(d)) => {
                return Err(Error::usage(format!(
                    "--dtype {d}: {} logs name their type; drop --dtype",
                    self.tool
                )))
            }
            (_, None) => None,
        };
        let bounded = |flag: &str, n: Option<usize>| match n {
            Some(0) | Some(1_048_577..) => Err(Error::usage(format!(
                "--{flag} {} is outside 1..=1048576",
                n.unwrap_or(0)
            ))),
            _ => Ok(n),
        };
        let overrides = Overrides {
            test: self.test,
            algo: self.algo.as_deref().map(str::parse::<Algo>).transpose()?,
            proto: self.proto.as_deref().map(str::parse::<Proto>).transpose()?,
            world: bounded("world", self.world)?,
            nodes: bounded("nodes", self.nodes)?,
            dtype,
        };
        if let (Some(w), Some(n)) = (overrides.world, overrides.nodes) {
            if n > w {
                return Err(Error::usage(format!("--nodes {n} exceeds --world {w}")));
            }
        }
        Ok(ImportRequest {
            source,
            logs: self.logs,
            out: self.out,
            overrides,
            command_line,
        })
    }
}
