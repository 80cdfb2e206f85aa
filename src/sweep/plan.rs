//! The sweep plan: typed options (parsed once from the command line) and the ordered list of
//! points they expand to. Rank processes receive the options and expand the same plan.

use crate::model::record::PointKey;
use serde::{Deserialize, Serialize};

use crate::backend::host::affinity::Bind;
use crate::backend::{BackendKind, Call};
use crate::collective::{Algo, DType, Op, ReduceOp, Shape};
use crate::error::{Error, Result};
use crate::sweep::topology::WorldShape;
use crate::units::format_size;

/// Everything that decides what a sweep measures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepOptions {
    pub ops: Vec<Op>,
    pub algos: Vec<Algo>,
    pub dtypes: Vec<DType>,
    pub redop: ReduceOp,
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
}

/// The data transport between the ranks of a local launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// Slot rings in the shared segment.
    #[default]
    Shm,
    /// One TCP connection per pair of ranks, over loopback.
    Tcp,
}

impl TransportKind {
    /// The name recorded in meta.json.
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Shm => "shm",
            TransportKind::Tcp => "tcp",
        }
    }
}

impl std::str::FromStr for TransportKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<TransportKind> {
        match s.trim().to_ascii_lowercase().as_str() {
            "shm" => Ok(TransportKind::Shm),
            "tcp" => Ok(TransportKind::Tcp),
            _ => Err(Error::usage(format!(
                "--transport '{s}' is not one of shm, tcp"
            ))),
        }
    }
}

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
    pub points: Vec<Point>,
    pub notes: Vec<String>,
}

impl SweepOptions {
    /// Checks what the parser cannot: world sizes against ranks, op/algo combinations.
    pub fn validate(&self) -> Result<()> {
        self.validate_for(BackendKind::Host)
    }

    /// [`SweepOptions::validate`] against the algorithms of `backend`.
    pub fn validate_for(&self, backend: BackendKind) -> Result<()> {
        if self.ranks == 0 {
            return Err(Error::usage("--ranks must be at least 1"));
        }
        if let Some(&w) = self.world_sizes.iter().find(|&&w| w == 0 || w > self.ranks) {
            return Err(Error::usage(format!(
                "world size {w} is not between 1 and --ranks {}; raise --ranks or drop it from --world-sizes",
                self.ranks
            )));
        }
        if self.iters == Some(0) {
            return Err(Error::usage("--iters must be at least 1"));
        }
        crate::sweep::limits::check_counts(self.iters, self.warmup)?;
        let any = self
            .ops
            .iter()
            .any(|op| self.algos.iter().any(|a| backend.algos(*op).contains(a)));
        if !any {
            return Err(Error::usage(format!(
                "no requested op has a requested algorithm: {}",
                self.combinations_hint(backend)
            )));
        }
        Ok(())
    }

    fn combinations_hint(&self, backend: BackendKind) -> String {
        let parts: Vec<String> = self
            .ops
            .iter()
            .map(|op| {
                let algos: Vec<&str> = backend.algos(*op).iter().map(|a| a.name()).collect();
                format!("{op} runs {}", algos.join("/"))
            })
            .collect();
        parts.join("; ")
    }

    /// The groups measured: `shapes` when set, else each world size on one host.
    pub fn world_shapes(&self) -> Vec<WorldShape> {
        if !self.shapes.is_empty() {
            return self.shapes.clone();
        }
        self.world_sizes
            .iter()
            .map(|&p| WorldShape {
                nodes: 1,
                per_node: p,
            })
            .collect()
    }

    /// Every group measured, with its node pair in a `--pairs` run.
    fn groups(&self) -> Vec<(WorldShape, Option<(usize, usize)>)> {
        if !self.pairs.is_empty() {
            let two = WorldShape {
                nodes: 2,
                per_node: 1,
            };
            return self.pairs.iter().map(|&p| (two, Some(p))).collect();
        }
        self.world_shapes().into_iter().map(|s| (s, None)).collect()
    }

    /// Expands the options into points, in the order they are measured: world, op, algo, dtype,
    /// placement, then size (so one curve is measured in one go).
    pub fn plan(&self) -> Plan {
        self.plan_for(BackendKind::Host)
    }

    /// [`SweepOptions::plan`] with the algorithms of `backend`.
    pub fn plan_for(&self, backend: BackendKind) -> Plan {
        let mut plan = Plan {
            points: Vec::new(),
            notes: Vec::new(),
        };
        for (shape, pair) in self.groups() {
            for &op in &self.ops {
                for &algo in self.algos.iter().filter(|a| backend.algos(op).contains(a)) {
                    for &dtype in &self.dtypes {
                        for &in_place in &self.in_place {
                            self.plan_curve(&mut plan, (shape, pair), op, algo, dtype, in_place);
                        }
                    }
                }
            }
        }
        for op in &self.ops {
            if let Some(a) = self.algos.iter().find(|a| !backend.algos(*op).contains(a)) {
                plan.notes.push(format!(
                    "{op} has no {a} algorithm on the {backend} backend; skipped"
                ));
            }
        }
        plan
    }

    fn plan_curve(
        &self,
        plan: &mut Plan,
        (group, pair): (WorldShape, Option<(usize, usize)>),
        op: Op,
        algo: Algo,
        dtype: DType,
        in_place: bool,
    ) {
        let world = group.world();
        let mut last = None;
        for &requested in &self.sizes {
            let shape = Shape::new(op, dtype, requested, world);
            if shape.bytes == 0 {
                let per = match op {
                    Op::AllGather | Op::ReduceScatter => " per rank",
                    _ => "",
                };
                plan.notes.push(format!(
                    "{op} {dtype} at world {world}: {} holds less than one element{per}; skipped",
                    format_size(requested)
                ));
                continue;
            }
            if last == Some(shape.bytes) {
                continue;
            }
            if shape.bytes != requested {
                let (from, to) = distinct_sizes(requested, shape.bytes);
                plan.notes.push(format!(
                    "{op} {dtype} at world {world}: {from} rounded down to {to} (whole elements per rank)"
                ));
            }
            last = Some(shape.bytes);
            let iters = self.iters.unwrap_or_else(|| default_iters(shape.bytes));
            let warmup = self.warmup.unwrap_or_else(|| default_warmup(iters));
            let call = Call {
                op,
                algo,
                dtype,
                redop: self.redop,
                shape,
            };
            plan.points.push(Point {
                call,
                world,
                nodes: group.nodes,
                pair,
                in_place,
                requested,
                iters,
                warmup,
            });
        }
    }
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
        }
    }

    /// A short description for messages: "allreduce ring f32 1 MiB world 4 out-of-place".
    pub fn describe(&self) -> String {
        let c = &self.call;
        format!(
            "{} {} {} {} at world {}{}{}",
            c.op,
            c.algo,
            c.dtype,
            format_size(c.shape.bytes),
            self.world,
            match self.pair {
                Some((a, b)) => format!(" between nodes {a} and {b}"),
                None => String::new(),
            },
            if self.in_place { " in place" } else { "" }
        )
    }

    /// Bytes one rank allocates for this point: input and output (or the one in-place buffer),
    /// plus the algorithm's scratch (ring ReduceScatter: two 256 KiB slices at most; recursive
    /// doubling: one partner buffer).
    pub fn bytes_per_rank(&self) -> usize {
        let s = &self.call.shape;
        let scratch = match (self.call.op, self.call.algo) {
            (Op::ReduceScatter, Algo::Ring) => 2 * s.out_bytes.min(256 << 10),
            (_, Algo::RecursiveDoubling) => s.out_bytes,
            _ => 0,
        };
        if self.in_place {
            s.in_bytes.max(s.out_bytes) + scratch
        } else {
            s.in_bytes + s.out_bytes + scratch
        }
    }
}

/// Two sizes written so that they read differently: binary units, or exact bytes when the
/// units would round them to the same text.
fn distinct_sizes(a: usize, b: usize) -> (String, String) {
    let (fa, fb) = (format_size(a), format_size(b));
    if fa == fb {
        (format!("{a} B"), format!("{b} B"))
    } else {
        (fa, fb)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> SweepOptions {
        SweepOptions {
            ops: vec![Op::AllReduce, Op::AllGather],
            algos: vec![Algo::Ring, Algo::Tree],
            dtypes: vec![DType::F32],
            redop: ReduceOp::Sum,
            ranks: 4,
            world_sizes: vec![2, 3],
            sizes: vec![4, 8, 16],
            in_place: vec![false],
            iters: None,
            warmup: None,
            bind: Bind::Core,
            transport: TransportKind::Shm,
            shapes: Vec::new(),
            pairs: Vec::new(),
        }
    }

    #[test]
    fn iteration_defaults() {
        assert_eq!(default_iters(8), 1000);
        assert_eq!(default_iters(1 << 20), 256);
        assert_eq!(default_iters(64 << 20), 20);
        assert_eq!(default_warmup(1000), 100);
        assert_eq!(default_warmup(20), 5);
    }

    #[test]
    fn plan_skips_unrepresentable_and_unsupported() {
        let plan = opts().plan();
        // world 2: allreduce ring+tree 3 sizes each = 6; allgather ring: 4 B skipped, 8, 16 = 2.
        // world 3: allreduce 6; allgather: 4 and 8 skipped, 16 -> 12 B.
        assert_eq!(plan.points.len(), 6 + 2 + 6 + 1);
        assert!(plan
            .notes
            .iter()
            .any(|n| n.contains("rounded down to 12 B")));
        assert!(plan
            .notes
            .iter()
            .any(|n| n.contains("allgather has no tree")));
        let ag3 = plan.points.last().unwrap();
        assert_eq!(
            (ag3.world, ag3.call.shape.bytes, ag3.requested),
            (3, 12, 16)
        );
    }

    #[test]
    fn validate_names_the_bad_world_size() {
        let mut o = opts();
        o.world_sizes = vec![2, 8];
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("world size 8") && e.contains("--ranks 4"), "{e}");
        let mut o = opts();
        o.ops = vec![Op::AllGather];
        o.algos = vec![Algo::Tree];
        assert!(o
            .validate()
            .unwrap_err()
            .to_string()
            .contains("allgather runs ring"));
    }

    #[test]
    fn rounding_notes_never_print_equal_sizes() {
        assert_eq!(
            distinct_sizes(1 << 20, 1000),
            ("1 MiB".into(), "1000 B".into())
        );
        let (a, b) = distinct_sizes(10_000_001, 10_000_000);
        assert_ne!(a, b);
        assert_eq!((a.as_str(), b.as_str()), ("10000001 B", "10000000 B"));
    }

    #[test]
    fn memory_estimate_counts_only_the_scratch_an_algorithm_uses() {
        let point = |op, algo, in_place| {
            let shape = Shape::new(op, DType::F32, 64 << 20, 4);
            let call = Call {
                op,
                algo,
                dtype: DType::F32,
                redop: ReduceOp::Sum,
                shape,
            };
            Point {
                call,
                world: 4,
                nodes: 1,
                pair: None,
                in_place,
                requested: 64 << 20,
                iters: 1,
                warmup: 0,
            }
        };
        let mib = 1 << 20;
        assert_eq!(
            point(Op::AllReduce, Algo::Ring, false).bytes_per_rank(),
            128 * mib
        );
        assert_eq!(
            point(Op::AllReduce, Algo::Ring, true).bytes_per_rank(),
            64 * mib
        );
        assert_eq!(
            point(Op::AllReduce, Algo::RecursiveDoubling, false).bytes_per_rank(),
            192 * mib
        );
        // ReduceScatter: 64 MiB in, 16 MiB out, two 256 KiB scratch slices.
        assert_eq!(
            point(Op::ReduceScatter, Algo::Ring, false).bytes_per_rank(),
            80 * mib + 512 * 1024
        );
        assert_eq!(
            point(Op::AllGather, Algo::Ring, false).bytes_per_rank(),
            80 * mib
        );
    }
}
