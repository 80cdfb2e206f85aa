//! `collbench sweep`'s command line: the flags (clap derive), parsed once into a typed
//! [`SweepRequest`]; `into_request` holds the checks that need more than one flag. Criteria
//! files and tests parse a sweep line alone with [`parse_sweep_line`].

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

use crate::collective::{Algo, DType, Op, Proto, ReduceOp};
use crate::error::{Error, Result};
use crate::model::call::{BackendKind, CtaPolicy, Register};
use crate::model::comm_setup::CommAxes;
use crate::named::{list_of, one_of, parse_names};
use crate::stats::LoopRank;

/// The most calls `--agg` groups into one iteration: each is a timed call NCCL must hold at once.
pub const MAX_AGG: usize = 1024;
use crate::model::plan::Bind;
use crate::model::plan::{Roots, SweepOptions, TransportKind};
use crate::model::topology::WorldSpec;
use crate::sweep::console::{TableFormat, View};
use crate::sweep::nccl_flags::NcclTestsFlags;
use crate::sweep::request::SweepRequest;
use crate::units::{format_size, parse_duration, parse_list, parse_size};

/// `collbench sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Collectives, comma separated.
    #[arg(long, default_value = "allreduce,allgather,reducescatter", value_parser = list_of::<Op>())]
    pub op: String,
    /// Algorithms, comma separated; an op offered none of them is skipped [default: each op's
    /// first host algorithm; auto with --backend mpi or nccl]. `--help` lists each op's.
    #[arg(long_help = algo_help())]
    #[arg(long, value_parser = list_of::<Algo>())]
    pub algo: Option<String>,
    /// NCCL protocols, comma separated (--backend nccl only; each is set as NCCL_PROTO for its
    /// own communicators) [default: auto].
    #[arg(long, value_parser = list_of::<Proto>())]
    pub proto: Option<String>,
    /// Capture each point's call in a CUDA graph and time one graph launch per iteration
    /// (--backend nccl only; as nccl-tests -G, it removes host launch overhead).
    #[arg(long)]
    pub cuda_graph: bool,
    /// With --cuda-graph: launches of the back-to-back loop's graph, which holds every timed
    /// iteration, as nccl-tests -G N (1 to 1000) [default: -G's N, else 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub graph_launches: Option<u32>,
    /// Calls per timed iteration, timed as one, each call's time the iteration's divided by N,
    /// as nccl-tests -m N: NCCL enqueues them between ncclGroupStart and ncclGroupEnd, the
    /// host and MPI backends issue them back to back (1 to 1024).
    #[arg(short = 'm', long, visible_alias = "agg_iters", default_value_t = 1)]
    pub agg: usize,
    /// 1: wait for each call of nccl-tests' back-to-back loop before the next, as nccl-tests
    /// -z 1 (NCCL: the stream; host and MPI calls return when the rank's part is done, so
    /// they block either way) [default: 0].
    #[arg(short = 'z', long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=1))]
    pub blocking: u8,
    /// Which rank's time of the back-to-back loop is the point's loop_time_us, as nccl-tests
    /// -a: rank0 (0), avg over ranks (1), min (2), max (3).
    #[arg(short = 'a', long, visible_alias = "average", default_value = "avg", value_parser = one_of::<LoopRank>())]
    pub loop_rank: LoopRank,
    /// NCCL CTA policies, comma separated (default and efficiency need NCCL 2.27+, zero 2.28+),
    /// set in ncclConfig_t.CTAPolicy as nccl-tests -x does; each is measured with communicators
    /// of its own and named in summary.csv (--backend nccl only) [default: the library's].
    #[arg(short = 'x', long, visible_alias = "cta_policy", value_parser = list_of::<CtaPolicy>())]
    pub cta_policy: Option<String>,
    /// NCCL CTA bounds, comma separated: N (exactly N CTAs per collective) or MIN:MAX, each 1
    /// to 64, set in ncclConfig_t.minCTAs/maxCTAs (NCCL_MIN_CTAS/NCCL_MAX_CTAS); each is
    /// measured with communicators of its own (--backend nccl only) [default: the library's].
    #[arg(long)]
    pub ctas: Option<String>,
    /// Buffer registrations, comma separated: local is ncclCommRegister (NCCL 2.19+), symmetric
    /// ncclCommWindowRegister (2.27+), as nccl-tests -R 0/1/2; each is measured with
    /// communicators of its own (--backend nccl only) [default: none].
    #[arg(short = 'R', long, visible_alias = "local_register", value_parser = list_of::<Register>())]
    pub register: Option<String>,
    /// Element types, comma separated, or all; nccl-tests' names (float, half, bfloat16, double,
    /// int8, uint8, int32, uint32, int64, uint64) are read too; fp8 (f8e4m3, f8e5m2) runs on
    /// NCCL 2.24.3+ and on the host and MPI backends through f32.
    #[arg(short = 'd', long, visible_alias = "datatype", default_value = "f32", value_parser = list_of::<DType>())]
    pub dtype: String,
    /// Reductions for the ops that reduce (allreduce, reducescatter, reduce), comma separated,
    /// or all (every one the backend runs: MPI has no avg or mulsum, the host no mulsum);
    /// nccl-tests -o (its long --op is collbench's --redop: collbench's --op names the
    /// collective).
    #[arg(short = 'o', long, default_value = "sum", value_parser = list_of::<ReduceOp>())]
    pub redop: String,
    /// Backend: host is built in (shared memory or TCP between rank processes); the others need
    /// a build with their cargo feature (`collbench backends` says which this binary has).
    #[arg(long, default_value_t = BackendKind::Host, value_parser = one_of::<BackendKind>())]
    pub backend: BackendKind,
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
    /// Multiplication factor between sizes (integer >= 2; 1 with -i: linear steps) [default: 2].
    #[arg(short = 'f', long = "stepfactor", allow_negative_numbers = true)]
    pub factor: Option<String>,
    /// Timed iterations per point [default: 256 MiB / S, between 20 and 1000].
    #[arg(short = 'n', long, allow_negative_numbers = true)]
    pub iters: Option<usize>,
    /// Warm-up iterations per point [default: iters / 10, between 5 and 100].
    #[arg(
        short = 'w',
        long,
        visible_alias = "warmup_iters",
        allow_negative_numbers = true
    )]
    pub warmup: Option<usize>,
    /// Root of broadcast, reduce, gather and scatter: a rank of each group (0 is the first), or
    /// all (every rank in turn, a curve each; as nccl-tests -r -1).
    #[arg(short = 'r', long, default_value = "0", allow_negative_numbers = true, value_parser = clap::value_parser!(Roots))]
    pub root: Roots,
    /// Placement of the output: off (out of place), on (in place), both [default: off; both
    /// with --format nccl-tests or --json-out].
    #[arg(long)]
    pub in_place: Option<String>,
    /// How host-backend ranks move data: shm (shared memory) or tcp (one loopback connection
    /// per pair); the other backends move data their own way [default: shm].
    #[arg(long, value_parser = one_of::<TransportKind>())]
    pub transport: Option<TransportKind>,
    /// Pin rank processes to cores: core (rank r on the r-th allowed CPU, cyclic) or none.
    #[arg(long, default_value = "core", value_parser = one_of::<Bind>())]
    pub bind: Bind,
    /// A rank that makes no progress for this long ends the run (e.g. 60s, 2m; a bare number is
    /// seconds, as nccl-tests -T).
    #[arg(short = 'T', long, default_value = "60s")]
    pub timeout: String,
    /// Measure every pair of nodes (one rank on each, one pair at a time) instead of
    /// --world-sizes, and name the links well below the healthy pairs. Needs a multi-host launch.
    #[arg(long)]
    pub pairs: bool,
    /// Find the slow node in about log2(nodes) rounds: halves of the nodes (one rank on each)
    /// measured at one size, the slower half bisected again. Needs 3+ hosts of a launch.
    #[arg(long, conflicts_with = "pairs")]
    pub bisect: bool,
    /// Results folder [default: results/<date>-<time>-<ops>-<backend>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Never show the progress bar (it is shown only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// The live table on stdout: collbench's columns, or nccl-tests 2.19's text (one table per
    /// test, out-of-place and in-place halves on one line; --in-place then defaults to both)
    /// for the parsers of its logs.
    #[arg(long, default_value = "collbench", value_parser = one_of::<TableFormat>())]
    pub format: TableFormat,
    /// Also write the tables as nccl-tests' -J JSON (schema version 3, a document per test) to
    /// this new file, rewritten after each row; `collbench import` reads it.
    #[arg(short = 'J', long, visible_alias = "output_file")]
    pub json_out: Option<PathBuf>,
    /// Write every point as Prometheus metrics (text format; NCCL Inspector's names with the
    /// prefix collbench_) to this file, replaced whole after each point: point a node
    /// exporter's textfile collector at its folder.
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    #[command(flatten)]
    pub soak: SoakFlags,
    #[command(flatten)]
    pub traffic: TrafficFlags,
    #[command(flatten)]
    pub split: SplitFlags,
    /// nccl-tests' flags without a collbench flag of their letter.
    #[command(flatten)]
    pub nccl_tests: NcclTestsFlags,
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

/// A `collbench sweep ...` line on its own.
#[derive(Parser, Debug)]
#[command(name = "collbench")]
struct SweepLine {
    #[command(subcommand)]
    command: SweepOnly,
}

#[derive(Subcommand, Debug)]
enum SweepOnly {
    Sweep(Box<SweepArgs>),
}

/// Parses `collbench sweep FLAGS...` (the first two words included) exactly as the command
/// line does.
pub fn parse_sweep_line<I, T>(argv: I) -> std::result::Result<SweepArgs, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let SweepOnly::Sweep(args) = SweepLine::try_parse_from(argv)?.command;
    Ok(*args)
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
        self.nccl_tests.refuse()?;
        if let Some(path) = &self.json_out {
            check_json_out(path)?;
        }
        if let Some(path) = &self.metrics {
            check_metrics(path)?;
        }
        let json_out = self.json_out.clone();
        let requested = self.nccl_tests.ranks_with(self.ranks)?;
        let ranks = requested.unwrap_or_else(default_ranks);
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
        let sizes = self.nccl_tests.sizes(begin, end, self.factor.as_deref())?;
        let ops = self.split.ops_or(&self.op)?;
        let backend = self.backend;
        let host_default = host_default_algos(&ops);
        let algo_text = self.algo.as_deref().unwrap_or(match backend {
            BackendKind::Mpi | BackendKind::Nccl => "auto",
            BackendKind::Host => &host_default,
        });
        let protos = parse_protos(backend, self.proto.as_deref())?;
        let cuda_graph = self.cuda_graph || self.nccl_tests.cuda_graph_launches.unwrap_or(0) > 0;
        if cuda_graph && backend != BackendKind::Nccl {
            return Err(Error::usage(format!(
                "--cuda-graph captures NCCL calls; drop it or use --backend nccl (this is --backend {backend})"
            )));
        }
        let graph_launches = self.graph_launches(cuda_graph)?;
        let comm = self.comm_axes(backend)?;
        let loop_timing = self.loop_timing()?;
        let algos = parse_names::<Algo>(algo_text)?;
        check_combinations(backend, (&ops, &algos), &self.op, algo_text)?;
        let traffic = self.traffic.source(&ops)?;
        if self.bisect && traffic.is_some() {
            return Err(Error::usage(
                "--bisect measures each group at the size of a uniform op; drop alltoallv from --op",
            ));
        }
        let opts = SweepOptions {
            ops,
            algos,
            dtypes: parse_names::<DType>(&self.dtype)?,
            redops: backend_redops(backend, &self.redop)?,
            ranks,
            world_sizes,
            sizes,
            in_place: self.placements()?,
            iters: self.iters,
            warmup: self.warmup,
            bind: self.bind,
            transport: self.transport_kind(backend)?,
            shapes: Vec::new(),
            pairs: Vec::new(),
            root: self.root,
            default_algos: self.algo.is_none() && backend == BackendKind::Host,
            loop_timing,
            soak: self.soak.soak(self.nccl_tests.run_cycles)?,
            traffic,
            split: self.split.rule()?,
            with_compute: self.split.with_compute,
            concurrent: self.split.concurrent.clone(),
        };
        Ok(SweepRequest {
            opts,
            backend,
            timeout: crate::model::limits::check_timeout(flag(
                "--timeout",
                parse_duration(&self.timeout),
            )?)?,
            out: self.out,
            ranks_given: requested.is_some(),
            pairs: self.pairs,
            bisect: self.bisect,
            world_specs,
            view: View {
                progress: !self.no_progress,
                format: self.format,
                json: json_out,
                metrics: self.metrics.clone(),
            },
            command_line,
            protos,
            cuda_graph,
            graph_launches,
            comm,
        })
    }
}

#[path = "args_outputs.rs"]
mod outputs;
use outputs::{check_json_out, check_metrics};

#[path = "args_backend.rs"]
mod backend;
use backend::parse_protos;

#[path = "args_soak.rs"]
mod soak;
use soak::SoakFlags;
#[path = "args_traffic.rs"]
mod traffic;
use traffic::TrafficFlags;

#[path = "args_split.rs"]
mod split;
use split::SplitFlags;

#[path = "args_algos.rs"]
mod algos;
use algos::{algo_help, backend_redops, check_combinations, host_default_algos};

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
