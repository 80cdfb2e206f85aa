//! The sweep plan: typed options (parsed once from the command line) and the ordered list of
//! points they expand to. Rank processes receive the options and expand the same plan.

use crate::model::record::{root_label, PointKey};
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::collective::traffic::Traffic;
use crate::collective::traffic_spec::TrafficSource;
use crate::collective::uneven::{self, RankCounts};
use crate::collective::{Algo, DType, Op, ReduceOp, Scratch};
use crate::model::call::Call;
use crate::model::concurrent::Concurrent;
use crate::model::split::{ranks_text, SplitRule};
use crate::model::topology::WorldShape;
use crate::named::named_enum;
use crate::stats::LoopRank;
use crate::units::format_size;

/// Everything that decides what a sweep measures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepOptions {
    pub ops: Vec<Op>,
    pub algos: Vec<Algo>,
    pub dtypes: Vec<DType>,
    /// The reductions of the ops that reduce; the others are measured once, recorded as sum.
    pub redops: Vec<ReduceOp>,
    /// Rank processes launched.
    pub ranks: usize,
    /// Sub-group sizes measured in this launch (each <= ranks).
    pub world_sizes: Vec<usize>,
    /// Requested total sizes in bytes (the -b/-e/-f series).
    pub sizes: Vec<usize>,
    /// Placements measured: false = out of place, true = in place.
    pub in_place: Vec<bool>,
    /// Timed iterations per point; None = size-dependent default.
    pub iters: Option<usize>,
    /// Warm-up iterations per point; None = size-dependent default.
    pub warmup: Option<usize>,
    /// Pinning of rank processes to cores.
    #[serde(default)]
    pub bind: Bind,
    /// How ranks move data: shared memory, or TCP over loopback.
    #[serde(default)]
    pub transport: TransportKind,
    /// Group shapes of a multi-host launch; when empty every world size is a group of the
    /// first ranks on one host.
    #[serde(default)]
    pub shapes: Vec<WorldShape>,
    /// Node pairs of a `--pairs` run (one rank on each node); when set, only they are measured.
    #[serde(default)]
    pub pairs: Vec<(usize, usize)>,
    /// The roots of the rooted ops (`--root`); other ops ignore it.
    #[serde(default)]
    pub root: Roots,
    /// No `--algo` was given: each op is measured with its own first algorithm of the backend
    /// (ring for AllReduce, pairwise for AllToAll, ...), not with every op's first one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub default_algos: bool,
    /// How nccl-tests' back-to-back loop (and, with `agg`, each timed sample) runs.
    #[serde(default)]
    pub loop_timing: LoopTiming,
    /// How many times the plan is measured (`--cycles`, `--duration`, nccl-tests' `-N`).
    #[serde(default, skip_serializing_if = "Soak::is_plain")]
    pub soak: Soak,
    /// Who sends how much to whom in alltoallv (`--traffic`; nccl-tests' spread 1 where none
    /// was given); other ops ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<TrafficSource>,
    /// nccl-tests' `NCCL_TESTS_SPLIT` rule (`--split`): each world's ranks in groups that run
    /// their calls at the same time, each also measured alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitRule>,
    /// `--with-compute`: every point measured again with this compute load running beside
    /// every rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_compute: Option<ComputeKind>,
    /// `--concurrent`: different collectives on different groups of each world at once, each
    /// group's call also measured alone; the ops are its entries' (not `ops`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<Concurrent>,
}

/// nccl-tests' timing flags: calls per timed iteration (`-m`), whether each waits for its
/// completion before the next (`-z`), and which rank's loop time is reported (`-a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopTiming {
    /// Calls per iteration: NCCL groups them (`ncclGroupStart`/`End`), the host and MPI issue
    /// them back to back; every time is divided by them.
    pub agg: usize,
    /// Wait for each iteration's completion before the next (NCCL: the stream; host and MPI
    /// calls return when this rank's part is done, so they always block).
    pub blocking: bool,
    /// Which rank's loop time is the point's.
    pub rank: LoopRank,
}

impl Default for LoopTiming {
    fn default() -> Self {
        LoopTiming {
            agg: 1,
            blocking: false,
            rank: LoopRank::Avg,
        }
    }
}

mod roots;
pub use roots::Roots;
mod soak;
pub use soak::{Soak, MAX_CYCLES, MAX_DURATION};
mod point_split;
pub use point_split::{Beside, PointSplit};

named_enum!(
    /// The compute load `--with-compute` runs beside every rank (the host's kernels:
    /// `backend::host::compute`; the GPU's: `backend::nccl::gemm`).
    ComputeKind, "compute load", {
        /// A memory-bound kernel: STREAM's triad over arrays past the caches (host).
        Memory => "memory",
        /// A cache-resident one: multiply-adds over an array in the first-level cache (host).
        Cache => "cache",
        /// A cuBLAS BF16 GEMM on a second stream of the rank's GPU (NCCL).
        Gemm => "gemm",
    }
);

named_enum!(
    /// Whether rank processes are pinned to cores.
    #[derive(Default)]
    Bind, "binding", {
        /// Rank r runs only on the (r mod n)-th CPU the launcher was allowed to use.
        #[default]
        Core => "core",
        /// Leave placement to the scheduler.
        None => "none",
    }
);

named_enum!(
    /// The data transport between the ranks of a local launch (its name is recorded in
    /// meta.json).
    #[derive(Default)]
    TransportKind, "transport", {
        /// Slot rings in the shared segment.
        #[default]
        Shm => "shm",
        /// One TCP connection per pair of ranks, over loopback.
        Tcp => "tcp",
    }
);

/// One measured point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub call: Call,
    pub world: usize,
    /// Hosts the group spans (`world / nodes` ranks on each).
    pub nodes: usize,
    /// The two nodes of a `--pairs` point (one rank on each).
    pub pair: Option<(usize, usize)>,
    pub in_place: bool,
    /// The size asked for; `call.shape.bytes` is what is measured.
    pub requested: usize,
    pub iters: usize,
    pub warmup: usize,
    /// nccl-tests' `-m`, `-z` and `-a`: calls per timed iteration (every time is the
    /// iteration's divided by them), blocking, and which rank's loop time is reported.
    pub timing: LoopTiming,
    /// The soak cycle it is measured in (0 outside soaks; [`Point::in_cycle`]).
    #[serde(default)]
    pub cycle: u64,
    /// An alltoallv point's traffic at its world and the words that named it; `None` for the
    /// other ops. Every process expands the plan from the options, so it is not sent.
    #[serde(skip)]
    pub traffic: Option<PointTraffic>,
    /// A `--split` point's groups and which of them run; `None` for a point of one group of the
    /// first `world` ranks. Expanded by every process, as `traffic` is.
    #[serde(skip)]
    pub split: Option<PointSplit>,
    /// The compute load running beside every rank's calls of this point; `None` for a point
    /// measured alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<ComputeKind>,
}

/// The traffic an alltoallv point runs.
#[derive(Clone, Debug, PartialEq)]
pub struct PointTraffic {
    pub label: String,
    pub traffic: Arc<Traffic>,
}

impl Point {
    /// Group rank `rank`'s counts of this point, where it is an alltoallv.
    pub fn rank_counts(&self, rank: usize) -> Option<RankCounts> {
        let t = self.traffic.as_ref()?;
        let (c, world) = (&self.call, self.world);
        let total = uneven::total_of(&c.shape, c.dtype);
        Some(RankCounts::of(
            &t.traffic,
            (world, rank),
            total,
            c.dtype.size(),
        ))
    }
}

/// Bytes moved per point that the default iteration count aims at (256 MiB).
const DEFAULT_BYTES_PER_POINT: usize = 256 << 20;
const DEFAULT_MIN_ITERS: usize = 20;
const DEFAULT_MAX_ITERS: usize = 1000;

/// Default timed iterations for a buffer of `bytes`: 1000 for small messages (latency-bound, so
/// cheap and noisy), falling as 256 MiB / S down to 20 for large ones.
pub fn default_iters(bytes: usize) -> usize {
    (DEFAULT_BYTES_PER_POINT / bytes.max(1)).clamp(DEFAULT_MIN_ITERS, DEFAULT_MAX_ITERS)
}

/// Default warm-up: a tenth of the timed iterations, at least 5 and at most 100.
pub fn default_warmup(iters: usize) -> usize {
    (iters / 10).clamp(5, 100)
}

/// The expanded plan and the notes worth telling the user (skipped or rounded sizes).
pub struct Plan {
    /// The points of one cycle.
    pub points: Vec<Point>,
    pub notes: Vec<String>,
    /// How many cycles of them are measured.
    pub soak: Soak,
}

impl Point {
    /// The key of a planned point measured on `backend`.
    pub fn key(&self, backend: &str) -> PointKey {
        let (p, c) = (self, &self.call);
        PointKey {
            backend: backend.into(),
            op: c.op,
            algo: c.algo,
            dtype: c.dtype,
            redop: c.redop,
            world: p.world,
            nodes: p.nodes,
            bytes: c.shape.bytes,
            count: c.shape.count,
            in_place: p.in_place,
            proto: None,
            root: c.op.rooted().then_some(c.root),
            comm: Default::default(),
            traffic: self.traffic.as_ref().map(|t| t.label.clone()),
            group: None,
            concurrent: self.compute.map(|k| format!("compute {k}")),
        }
    }

    /// The key of group `i` of a `--split` point (the point's own key where it has no split):
    /// its ranks, and the split's label where the groups ran at once.
    pub fn group_key(&self, backend: &str, i: usize) -> PointKey {
        let mut key = self.key(backend);
        if let Some(s) = &self.split {
            key.group = s.split.groups.get(i).map(|g| ranks_text(g));
            key.concurrent = s.alone.is_none().then(|| s.split.label.clone());
        }
        key
    }

    /// The calls this point makes: its own, or a `--concurrent` point's calls at once (every
    /// entry's, its own among them).
    pub fn calls(&self) -> Vec<&Point> {
        match self.together() {
            Some(b) => b.calls.iter().collect(),
            None => vec![self],
        }
    }

    /// A `--concurrent` point's calls at once, where every group of them runs (not one alone).
    fn together(&self) -> Option<&Beside> {
        let s = self.split.as_ref()?;
        s.beside.as_deref().filter(|_| s.alone.is_none())
    }

    /// A short description for messages: "allreduce ring f32 sum 1 MiB at world 4 in place".
    pub fn describe(&self) -> String {
        let c = &self.call;
        format!(
            "{} {} {}{} {} at world {}{}{}{}",
            c.op,
            c.algo,
            c.dtype,
            if c.op.reduces() {
                format!(" {}", c.redop)
            } else {
                String::new()
            },
            format_size(c.shape.bytes),
            self.world,
            match self.pair {
                Some((a, b)) => format!(" between nodes {a} and {b}"),
                None => String::new(),
            },
            if self.in_place { " in place" } else { "" },
            root_label(c.op.rooted().then_some(c.root))
        ) + &self.split_label()
            + &self
                .compute
                .map_or(String::new(), |k| format!(", with {k} compute"))
    }

    /// The rows this point writes, each the index of its call among [`Point::calls`], the
    /// global ranks that made it and its key: one per running group of a split (of every call
    /// of a `--concurrent` point), else the first `world` ranks with the point's own key.
    pub fn rows(&self, backend: &str) -> Vec<(usize, Vec<usize>, PointKey)> {
        if let Some(b) = self.together() {
            let label = |(i, (_, members, key)): (usize, (usize, Vec<usize>, PointKey))| {
                let concurrent = Some(b.label.clone());
                (i, members, PointKey { concurrent, ..key })
            };
            let each = (b.calls.iter().enumerate())
                .flat_map(|(i, c)| c.rows(backend).into_iter().map(move |r| (i, r)));
            return each.map(label).collect();
        }
        match &self.split {
            Some(s) => (s.running().into_iter())
                .map(|i| (0, s.split.groups[i].clone(), self.group_key(backend, i)))
                .collect(),
            None => vec![(0, (0..self.world).collect(), self.key(backend))],
        }
    }

    /// `, group 1-3/2 alone` or `, 2 groups at once (split %2)`; nothing without a split.
    fn split_label(&self) -> String {
        match &self.split {
            None => String::new(),
            Some(PointSplit {
                split,
                alone: Some(i),
                ..
            }) => {
                let g = split
                    .groups
                    .get(*i)
                    .map_or(String::new(), |g| ranks_text(g));
                format!(", group {g} alone")
            }
            Some(PointSplit {
                beside: Some(b), ..
            }) => format!(", at once with the other calls of {}", b.label),
            Some(PointSplit {
                split, alone: None, ..
            }) => {
                format!(", {} groups at once ({})", split.groups.len(), split.label)
            }
        }
    }

    /// Whether global rank `rank` calls at this point: one of the first `world` ranks, or of a
    /// split's groups that run.
    pub fn runs_on(&self, rank: usize) -> bool {
        match &self.split {
            None => rank < self.world,
            Some(s) => (s.running().into_iter()).any(|i| s.split.groups[i].contains(&rank)),
        }
    }

    /// Bytes one rank allocates for this point: input and output (or the one in-place buffer),
    /// plus the algorithm's scratch (the op's row says which, [`Scratch`]).
    pub fn bytes_per_rank(&self) -> usize {
        let s = &self.call.shape;
        let block = s.bytes / self.world.max(1);
        let scratch = match self.call.op.scratch(self.call.algo) {
            Scratch::None => 0,
            Scratch::RingSlices => 2 * s.out_bytes.min(256 << 10),
            Scratch::Partner => s.out_bytes,
            Scratch::BruckBlocks => 2 * (self.world / 2) * block,
            Scratch::Subtree => (self.world / 2) * block,
            Scratch::InPlaceCopy if self.in_place => s.bytes,
            Scratch::InPlaceCopy => 0,
        };
        if self.in_place {
            s.in_bytes.max(s.out_bytes) + scratch
        } else {
            s.in_bytes + s.out_bytes + scratch
        }
    }
}

mod expand;
mod expand_concurrent;
mod expand_split;
mod validate;

#[cfg(test)]
pub(crate) mod tests;
