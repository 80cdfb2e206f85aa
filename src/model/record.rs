//! One measured point: the row of summary.csv and what the table prints.

use serde::{Deserialize, Serialize};

use crate::collective::{Algo, DType, Op, Proto, ReduceOp};

/// Identifies a point of the sweep plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
}

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

    /// Whether the point was summarised from per-iteration samples (it has a median).
    pub fn has_samples(&self) -> bool {
        self.time_us_median.is_finite()
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
