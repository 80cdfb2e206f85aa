//! One measured point: the row of summary.csv and what the table prints.

use serde::{Deserialize, Serialize};

use super::comm_setup::CommSetup;
use crate::collective::{algbw_gbps, busbw_gbps, Algo, DType, Op, Proto, ReduceOp};

/// Identifies a point of the sweep plan.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PointKey {
    pub backend: String,
    pub op: Op,
    pub algo: Algo,
    pub dtype: DType,
    pub redop: ReduceOp,
    /// Ranks taking part (the sub-group size).
    pub world: usize,
    /// Hosts the ranks span.
    pub nodes: usize,
    /// Effective total buffer size `S` in bytes (nccl-tests semantics).
    pub bytes: usize,
    /// Elements in `S`.
    pub count: usize,
    pub in_place: bool,
    /// The NCCL protocol asked for (`NCCL_PROTO`); `None` for backends without protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<Proto>,
    /// The root rank of a rooted op (Broadcast, Reduce, Gather, Scatter; nccl-tests' `root`
    /// column); `None` for the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<usize>,
    /// The NCCL communicators' registration, CTA policy and CTA bounds; the default (nothing
    /// set) on other backends and in imports.
    #[serde(default, skip_serializing_if = "CommSetup::is_default")]
    pub comm: CommSetup,
    /// An alltoallv point's traffic pattern as `--traffic` named it (`spread 1`, `matrix
    /// t.txt`, ...); `None` for the other ops and in imports, whose logs do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<String>,
    /// A `--split` point's group: its global ranks (`0-3`, `1-7/2`, `0 1 5`); `None` for a
    /// point of the first `world` ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// What ran at the same time as this group's call (`split %2`: every group of the split);
    /// `None` where the call ran alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<String>,
}

impl PointKey {
    /// `group 1-3/2`, `group 1-3/2 with split %2 of 8` where other groups ran at the same
    /// time, `with compute memory` beside a compute load; `None` for a call of the first
    /// `world` ranks alone.
    pub fn group_label(&self) -> Option<String> {
        match (&self.group, &self.concurrent) {
            (Some(g), Some(with)) => Some(format!("group {g} with {with}")),
            (Some(g), None) => Some(format!("group {g}")),
            (None, Some(with)) => Some(format!("with {with}")),
            (None, None) => None,
        }
    }
}

/// How messages and labels name a root: ` root N` for a root other than 0, nothing for root 0
/// (the default) or an op without one.
pub fn root_label(root: Option<usize>) -> String {
    match root {
        Some(r) if r != 0 => format!(" root {r}"),
        _ => String::new(),
    }
}

/// A measured point: key, timing summary of the per-iteration samples (each sample is the slowest
/// rank's time of that iteration), bandwidths derived from the median, and the correctness check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    #[serde(flatten)]
    pub key: PointKey,
    pub iters: usize,
    pub warmup: usize,
    pub time_us_mean: f64,
    pub time_us_median: f64,
    pub time_us_min: f64,
    pub time_us_p95: f64,
    pub time_us_p99: f64,
    pub time_us_max: f64,
    pub time_us_stddev: f64,
    /// Coefficient of variation of the samples (stddev / mean), unitless.
    pub time_cv: f64,
    /// Median absolute deviation of the samples.
    pub time_us_mad: f64,
    /// algbw from the median time.
    pub algbw_gbps: f64,
    /// busbw from the median time.
    pub busbw_gbps: f64,
    /// busbw from the mean time (what nccl-tests prints).
    pub busbw_gbps_mean: f64,
    /// Elements that differed from the exact expected value, summed over ranks.
    pub wrong: u64,
    /// The rank that was slowest most often.
    pub slowest_rank: usize,
    /// Median over iterations of (slowest rank time - fastest rank time), in microseconds.
    pub skew_us_median: f64,
    /// NCCL's own estimate of one call's time (`ncclGroupSimulateEnd`, NCCL 2.22+), the largest
    /// over the ranks, in microseconds; `None` where the library offers none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_estimate_us: Option<f64>,
    /// nccl-tests' time of one call: the member ranks leave one barrier together, run the
    /// timed iterations' count of calls back to back, and each divides its wall clock over the
    /// loop (stream synchronised) by the calls; the mean over ranks (nccl-tests `-a 1`, its
    /// default). `None` where no such loop ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_time_us: Option<f64>,
    /// The NCCL function(s) that ran the point ([`Op::nccl_function`], or
    /// [`crate::collective::NCCL_GROUPED_P2P`] where the library lacks the op's own); `None`
    /// on other backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_call: Option<String>,
    /// The algorithm and protocol NCCL ran the point's collective with, as its profiler
    /// interface told rank 0 (`ring`, `tree`, `nvls`, ...; `ll`, `ll128`, `simple`); `None`
    /// where NCCL described no collective (older than 2.23, a point-to-point group, a profiler
    /// of the user's own) and on other backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_algo: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_proto: Option<String>,
    /// The soak cycle that measured the point (0 outside soaks).
    #[serde(default)]
    pub cycle: u64,
    /// When the lead wrote the point, RFC 3339 UTC to the millisecond; `None` in imports and
    /// in folders written before the column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_utc: Option<String>,
    /// A group's median time with its split's other groups running over its median alone
    /// (the point measured just before it); `None` for a call that ran alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<f64>,
    /// The sum of every group's busbw where the groups ran at once (nccl-tests reports one
    /// group's: "multiply by the number of groups"); `None` for a call that ran alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_busbw_gbps: Option<f64>,
    /// A `--with-compute` point's compute load: its rate alone over its rate while the calls
    /// ran back to back, the median over the ranks (1.25: the compute ran 25% slower beside
    /// the collective); `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_slowdown: Option<f64>,
}

/// The names `nccl_algo` takes (NCCL's `NCCL_ALGO_*`, lower case), and `unknown`.
pub const NCCL_ALGOS: [&str; 8] = [
    "tree",
    "ring",
    "collnetdirect",
    "collnetchain",
    "nvls",
    "nvlstree",
    "pat",
    "unknown",
];
/// The names `nccl_proto` takes (NCCL's `NCCL_PROTO_*`, lower case), and `unknown`.
pub const NCCL_PROTOS: [&str; 4] = ["ll", "ll128", "simple", "unknown"];

impl PointRecord {
    /// The point's typical time per call: the median of its samples, or the mean where the point
    /// has no median (imported from a log that prints one average per size).
    pub fn time_us_typical(&self) -> f64 {
        if self.time_us_median.is_finite() {
            self.time_us_median
        } else {
            self.time_us_mean
        }
    }

    /// algbw of the loop time, as nccl-tests computes `algbw` from its time.
    pub fn loop_algbw_gbps(&self) -> Option<f64> {
        let t = self.loop_time_us.filter(|t| *t > 0.0)?;
        let k = &self.key;
        Some(algbw_gbps(k.op, k.bytes, k.world, t))
    }

    /// busbw of the loop time, as nccl-tests computes `busbw`: the figure to hold against its.
    pub fn loop_busbw_gbps(&self) -> Option<f64> {
        Some(self.loop_algbw_gbps()? * self.key.op.busbw_factor(self.key.world))
    }

    /// Whether the point was summarised from per-iteration samples (it has a median).
    pub fn has_samples(&self) -> bool {
        self.time_us_median.is_finite()
    }
}

/// The time of every sample of [`PointRecord::example`], in microseconds.
pub const EXAMPLE_TIME_US: f64 = 100.0;

/// A plausible record to start from where a test or an example needs one, and setters for what
/// tests vary; production code builds records from measurements or files instead.
impl PointRecord {
    /// `op` on `bytes` bytes over `world` ranks of one node, as the host backend would record
    /// it: its first algorithm for `op` (ring; tree for Broadcast and Reduce), root 0 for the
    /// rooted ops, f32 summed,
    /// out of place, no protocol; 5 timed iterations after 1 warm-up, every one taking
    /// [`EXAMPLE_TIME_US`] (so every time statistic is that and the spread is 0), bandwidths
    /// from that time by the nccl-tests rules, no wrong element, no skew, no NCCL estimate.
    pub fn example(op: Op, bytes: usize, world: usize) -> PointRecord {
        let key = PointKey {
            backend: super::call::BackendKind::Host.name().into(),
            op,
            algo: op.host_algos()[0],
            dtype: DType::F32,
            redop: ReduceOp::Sum,
            world,
            nodes: 1,
            bytes,
            count: bytes / DType::F32.size(),
            in_place: false,
            proto: None,
            root: op.rooted().then_some(0),
            comm: CommSetup::default(),
            traffic: None,
            group: None,
            concurrent: None,
        };
        let unset = PointRecord {
            key,
            iters: 5,
            warmup: 1,
            time_us_mean: f64::NAN,
            time_us_median: f64::NAN,
            time_us_min: f64::NAN,
            time_us_p95: f64::NAN,
            time_us_p99: f64::NAN,
            time_us_max: f64::NAN,
            time_us_stddev: 0.0,
            time_cv: 0.0,
            time_us_mad: 0.0,
            algbw_gbps: f64::NAN,
            busbw_gbps: f64::NAN,
            busbw_gbps_mean: f64::NAN,
            wrong: 0,
            slowest_rank: 0,
            skew_us_median: 0.0,
            nccl_estimate_us: None,
            loop_time_us: None,
            nccl_call: None,
            nccl_algo: None,
            nccl_proto: None,
            cycle: 0,
            ended_utc: None,
            slowdown: None,
            aggregate_busbw_gbps: None,
            compute_slowdown: None,
        };
        unset.with_time_us(EXAMPLE_TIME_US)
    }

    /// Every sample taking `time_us`: each time statistic is `time_us`, and the bandwidths
    /// follow from it and the key (op, world, bytes) as the sweep computes them.
    pub fn with_time_us(mut self, time_us: f64) -> PointRecord {
        for t in [
            &mut self.time_us_mean,
            &mut self.time_us_median,
            &mut self.time_us_min,
            &mut self.time_us_p95,
            &mut self.time_us_p99,
            &mut self.time_us_max,
        ] {
            *t = time_us;
        }
        let k = &self.key;
        self.algbw_gbps = algbw_gbps(k.op, k.bytes, k.world, time_us);
        self.busbw_gbps = busbw_gbps(k.op, k.world, self.algbw_gbps);
        self.busbw_gbps_mean = self.busbw_gbps;
        self
    }

    /// The backend's name (`host`, `mpi`, `nccl`).
    pub fn with_backend(mut self, backend: &str) -> PointRecord {
        self.key.backend = backend.into();
        self
    }

    /// The algorithm (not checked against the backend's list).
    pub fn with_algo(mut self, algo: Algo) -> PointRecord {
        self.key.algo = algo;
        self
    }

    /// The protocol asked for; `None` for backends without protocols.
    pub fn with_comm(mut self, comm: CommSetup) -> PointRecord {
        self.key.comm = comm;
        self
    }

    pub fn with_proto(mut self, proto: Option<Proto>) -> PointRecord {
        self.key.proto = proto;
        self
    }

    /// The element type, with the element count of the same bytes.
    pub fn with_dtype(mut self, dtype: DType) -> PointRecord {
        self.key.dtype = dtype;
        self.key.count = self.key.bytes / dtype.size();
        self
    }

    /// In place (one buffer) or out of place.
    pub fn with_in_place(mut self, in_place: bool) -> PointRecord {
        self.key.in_place = in_place;
        self
    }

    /// The reduction.
    pub fn with_redop(mut self, redop: ReduceOp) -> PointRecord {
        self.key.redop = redop;
        self
    }
}

/// One timed iteration across the ranks of a point (a row of samples.csv).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterSample {
    /// The slowest rank's time for this iteration: the iteration's time.
    pub time_us: f64,
    /// Which rank (within the group) was slowest.
    pub slowest_rank: usize,
    /// The fastest rank's time for this iteration.
    pub fastest_us: f64,
}

/// One rank's own view of a point (a row of ranks.csv), for skew and slow-rank analysis.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankSummary {
    /// Index within the group.
    pub rank: usize,
    /// Rank in the launch (equal to `rank` for a group of the first ranks).
    #[serde(default)]
    pub global_rank: usize,
    /// The node (index into meta.json's `hosts`) the rank ran on.
    #[serde(default)]
    pub node: usize,
    pub time_us_median: f64,
    pub time_us_mean: f64,
    pub time_us_max: f64,
    /// Wrong elements this rank found in its own output.
    pub wrong: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_root_other_than_0_is_named() {
        assert_eq!(root_label(Some(3)), " root 3");
        assert_eq!(root_label(Some(0)), "");
        assert_eq!(root_label(None), "");
    }

    #[test]
    fn example_statistics_and_bandwidths_follow_from_the_time_and_key() {
        let r = PointRecord::example(Op::AllReduce, 1 << 20, 4);
        assert_eq!((r.time_us_median, r.time_us_p99), (100.0, 100.0));
        let r = r.with_time_us(50.0);
        assert_eq!(
            (r.time_us_mean, r.time_us_min, r.time_us_max),
            (50.0, 50.0, 50.0)
        );
        // 1 MiB in 50 µs: 20.97152 GB/s; AllReduce over 4 ranks: busbw × 1.5.
        assert!((r.algbw_gbps - 20.97152).abs() < 1e-9);
        assert!((r.busbw_gbps - 31.45728).abs() < 1e-9);
        assert_eq!(r.busbw_gbps_mean, r.busbw_gbps);
        assert_eq!(
            (r.key.algo, r.key.count, r.time_cv),
            (Algo::Ring, 262_144, 0.0)
        );
        let b = PointRecord::example(Op::Broadcast, 6, 2).with_dtype(DType::F16);
        assert_eq!((b.key.algo, b.key.count), (Algo::Tree, 3));
    }
}
