//! The command line (clap derive only). Values are parsed once here into typed options; see
//! `into_request` for the checks that need more than one flag.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::backend::host::affinity::Bind;
use crate::backend::BackendKind;
use crate::collective::{Algo, DType, Op, Proto, ReduceOp};
use crate::error::{Error, Result};
use crate::fit::command::FitRequest;
use crate::fit::export::{ExportFormat, ExportOptions, ExportRequest};
use crate::sweep::plan::{SweepOptions, TransportKind};
use crate::sweep::run::SweepRequest;
use crate::sweep::topology::WorldSpec;
use crate::units::{
    format_size, parse_duration, parse_factor, parse_list, parse_size, size_series,
};

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

/// `collbench sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Collectives, comma separated: allreduce, allgather, reducescatter, broadcast, reduce.
    #[arg(long, default_value = "allreduce,allgather,reducescatter")]
    pub op: String,
    /// Algorithms, comma separated: ring, tree, recursive-doubling; with --backend mpi also
    /// auto (the library's own choice), recursive-halving, rabenseifner, bruck and
    /// neighbor-exchange; with --backend nccl auto, ring, tree, nvls and collnet. Ops without a
    /// listed algorithm are skipped [default: ring; auto with --backend mpi or nccl].
    #[arg(long)]
    pub algo: Option<String>,
    /// NCCL protocols, comma separated: ll, ll128, simple, auto (--backend nccl only; each is
    /// set as NCCL_PROTO for its own communicators) [default: auto].
    #[arg(long)]
    pub proto: Option<String>,
    /// Capture each point's call in a CUDA graph and time one graph launch per iteration
    /// (--backend nccl only; as nccl-tests -G, it removes host launch overhead).
    #[arg(long)]
    pub cuda_graph: bool,
    /// Element types, comma separated: f32, f64, f16, bf16, i32.
    #[arg(long, default_value = "f32")]
    pub dtype: String,
    /// Reduction for allreduce, reducescatter and reduce: sum, max, min.
    #[arg(long, default_value = "sum")]
    pub redop: String,
    /// Backend: host (built in, shared memory), mpi or nccl (need a build with that feature).
    #[arg(long, default_value = "host")]
    pub backend: String,
    /// Rank processes to start on this host [default: cores, at least 2].
    #[arg(long, allow_negative_numbers = true)]
    pub ranks: Option<usize>,
    /// Group sizes to measure within one launch, comma separated [default: --ranks].
    #[arg(long)]
    pub world_sizes: Option<String>,
    /// Smallest total size S in bytes; K, M, G suffixes are binary (1K = 1024).
    #[arg(
        short = 'b',
        long = "minbytes",
        default_value = "8",
        allow_negative_numbers = true
    )]
    pub min_bytes: String,
    /// Largest total size S in bytes.
    #[arg(
        short = 'e',
        long = "maxbytes",
        default_value = "64M",
        allow_negative_numbers = true
    )]
    pub max_bytes: String,
    /// Multiplication factor between sizes (integer >= 2).
    #[arg(
        short = 'f',
        long = "stepfactor",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub factor: String,
    /// Timed iterations per point [default: 256 MiB / S, between 20 and 1000].
    #[arg(long, allow_negative_numbers = true)]
    pub iters: Option<usize>,
    /// Warm-up iterations per point [default: iters / 10, between 5 and 100].
    #[arg(long, allow_negative_numbers = true)]
    pub warmup: Option<usize>,
    /// Placement of the output: off (out of place), on (in place), both.
    #[arg(long, default_value = "off")]
    pub in_place: String,
    /// How ranks move data: shm (shared memory) or tcp (one loopback connection per pair).
    #[arg(long, default_value = "shm")]
    pub transport: String,
    /// Pin rank processes to cores: core (rank r on the r-th allowed CPU, cyclic) or none.
    #[arg(long, default_value = "core")]
    pub bind: String,
    /// A rank that makes no progress for this long ends the run (e.g. 60s, 2m).
    #[arg(long, default_value = "60s")]
    pub timeout: String,
    /// Measure every pair of nodes (one rank on each, one pair at a time) instead of
    /// --world-sizes, and name the links well below the healthy pairs. Needs a multi-host launch.
    #[arg(long)]
    pub pairs: bool,
    /// Results folder [default: results/<date>-<time>-<ops>-<backend>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Never show the progress bar (it is shown only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

/// `collbench fit`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  collbench fit results/run-a results/run-b -o fit.json\n  \
collbench fit fit.json --predict op=allgather,algo=ring,world=64,bytes=1G\n  \
collbench fit fit.json --predict op=allreduce,world=16,nodes=2,bytes=256M --json\n  \
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
    /// Predict one call: op=..,algo=..(ring),world=..,bytes=..[,nodes=..][,dtype=..].
    #[arg(long, value_name = "SPEC")]
    pub predict: Option<String>,
    /// Print the prediction as one JSON object (time_us, interval_us, busbw_gbps, ...).
    #[arg(long)]
    pub json: bool,
    /// Write the fitted network for another tool: astra-sim, calculon, nccl-tuner
    /// (docs/EXPORTS.md).
    #[arg(long, value_name = "FORMAT", conflicts_with = "predict",
          value_parser = |s: &str| s.parse::<ExportFormat>().map_err(|e| e.to_string()))]
    pub export: Option<ExportFormat>,
    /// Where --export writes [default: stdout].
    #[arg(long, value_name = "FILE", requires = "export")]
    pub export_out: Option<PathBuf>,
    /// --export: the op whose model gives the link numbers [default: the first of allgather,
    /// reducescatter, allreduce with a ring or two-level model].
    #[arg(long, value_name = "OP", requires = "export",
          value_parser = |s: &str| s.parse::<Op>().map_err(|e| e.to_string()))]
    pub export_op: Option<Op>,
    /// --export: ranks (NPUs) in all [default: the largest world fitted].
    #[arg(long, value_name = "N", requires = "export")]
    pub npus: Option<usize>,
    /// --export: nodes the ranks span [default: 1, or as fitted for a two-level model].
    #[arg(long, value_name = "N", requires = "export")]
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

/// The hidden `__rank` subcommand.
#[derive(Args, Debug)]
pub struct RankCliArgs {
    #[arg(long)]
    pub rank: usize,
    #[arg(long)]
    pub fd: i32,
    #[arg(long)]
    pub layout: String,
}

fn parse_in_place(s: &str) -> Result<Vec<bool>> {
    match s.trim().to_ascii_lowercase().as_str() {
        "off" | "no" | "false" | "out" => Ok(vec![false]),
        "on" | "yes" | "true" | "in" => Ok(vec![true]),
        "both" => Ok(vec![false, true]),
        _ => Err(Error::usage(format!(
            "--in-place '{s}' is not one of off, on, both"
        ))),
    }
}

/// Prefixes a value's error with the flag that carried it, so the line says where to look.
fn flag<T>(name: &str, r: Result<T>) -> Result<T> {
    r.map_err(|e| match e {
        Error::Usage(msg) => Error::Usage(format!("{name}: {msg}")),
        other => other,
    })
}

/// Refuses an --op/--algo pair where no op has any of the algorithms (`--op allgather --algo
/// tree`), naming both flags; ops that lack some of the algorithms are skipped with a note.
fn check_combinations(
    backend: BackendKind,
    (ops, algos): (&[Op], &[Algo]),
    op_text: &str,
    algo_text: &str,
) -> Result<()> {
    if ops
        .iter()
        .any(|op| algos.iter().any(|a| backend.algos(*op).contains(a)))
    {
        return Ok(());
    }
    let runs: Vec<String> = ops
        .iter()
        .map(|op| {
            let names: Vec<&str> = backend.algos(*op).iter().map(|a| a.name()).collect();
            format!("{op} runs {}", names.join("/"))
        })
        .collect();
    Err(Error::usage(format!(
        "--op {} with --algo {}: no such combination on the {backend} backend ({})",
        op_text.trim(),
        algo_text.trim(),
        runs.join("; ")
    )))
}

/// `--proto`: NCCL protocols, refused for the other backends (they have no such choice).
fn parse_protos(backend: BackendKind, text: Option<&str>) -> Result<Vec<Proto>> {
    match (backend, text) {
        (BackendKind::Nccl, t) => parse_list::<Proto>(t.unwrap_or("auto")),
        (_, None) => Ok(Vec::new()),
        (b, Some(t)) => Err(Error::usage(format!(
            "--proto {}: protocols are NCCL's; drop --proto or use --backend nccl (this is --backend {b})",
            t.trim()
        ))),
    }
}

fn default_ranks() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 8)
}

/// The most ranks one host launch may start.
pub const MAX_LOCAL_RANKS: usize = 256;

impl SweepArgs {
    /// Parses every value into a typed request; the first bad value is the error.
    pub fn into_request(self, command_line: Vec<String>) -> Result<SweepRequest> {
        let ranks = self.ranks.unwrap_or_else(default_ranks);
        if ranks == 0 || ranks > MAX_LOCAL_RANKS {
            return Err(Error::usage(format!(
                "--ranks {ranks} is not between 1 and {MAX_LOCAL_RANKS}"
            )));
        }
        let world_specs = match &self.world_sizes {
            Some(w) => crate::units::parse_list_with(w, |s| s.parse::<WorldSpec>())?,
            None => Vec::new(),
        };
        let world_sizes = if world_specs.is_empty() {
            vec![ranks]
        } else {
            world_specs.iter().map(WorldSpec::world).collect()
        };
        let begin = flag("-b", parse_size(&self.min_bytes))?;
        let end = flag("-e", parse_size(&self.max_bytes))?;
        if begin == 0 {
            return Err(Error::usage(format!(
                "-b {}: the smallest size must be at least 1 byte",
                self.min_bytes.trim()
            )));
        }
        if end < begin {
            return Err(Error::usage(format!(
                "inverted size range: -b {} ({}) is larger than -e {} ({}); give -b <= -e",
                self.min_bytes.trim(),
                format_size(begin),
                self.max_bytes.trim(),
                format_size(end)
            )));
        }
        let factor = flag("-f", parse_factor(&self.factor))?;
        let ops = parse_list::<Op>(&self.op)?;
        let backend = self.backend.parse::<BackendKind>()?;
        let algo_text = self.algo.as_deref().unwrap_or(match backend {
            BackendKind::Mpi | BackendKind::Nccl => "auto",
            BackendKind::Host => "ring",
        });
        let protos = parse_protos(backend, self.proto.as_deref())?;
        if self.cuda_graph && backend != BackendKind::Nccl {
            return Err(Error::usage(format!(
                "--cuda-graph captures NCCL calls; drop it or use --backend nccl (this is --backend {backend})"
            )));
        }
        let algos = parse_list::<Algo>(algo_text)?;
        check_combinations(backend, (&ops, &algos), &self.op, algo_text)?;
        let opts = SweepOptions {
            ops,
            algos,
            dtypes: parse_list::<DType>(&self.dtype)?,
            redop: self.redop.parse::<ReduceOp>()?,
            ranks,
            world_sizes,
            sizes: size_series(begin, end, factor)?,
            in_place: parse_in_place(&self.in_place)?,
            iters: self.iters,
            warmup: self.warmup,
            bind: self.bind.parse::<Bind>()?,
            transport: self.transport.parse::<TransportKind>()?,
            shapes: Vec::new(),
            pairs: Vec::new(),
        };
        Ok(SweepRequest {
            opts,
            backend,
            timeout: crate::sweep::limits::check_timeout(flag(
                "--timeout",
                parse_duration(&self.timeout),
            )?)?,
            out: self.out,
            ranks_given: self.ranks.is_some(),
            pairs: self.pairs,
            world_specs,
            progress: !self.no_progress,
            command_line,
            protos,
            cuda_graph: self.cuda_graph,
        })
    }
}

#[cfg(test)]
#[path = "cli_tests.rs"]
mod tests;
