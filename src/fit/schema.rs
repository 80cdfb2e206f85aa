//! `fit.json` (schema `collbench.fit/v1`): the only thing the projection reads from the
//! measurement side, and the form bundled network profiles take. Documented field by field in
//! docs/FORMATS.md.
//!
//! Units are in the names: times in µs, inverse bandwidths in ns per byte (1 ns/B is 1 GB/s),
//! bandwidths in GB/s (10⁹ bytes per second).

use std::path::Path;

pub use super::slowdowns::{SlowdownCurve, SlowdownPoint};
use serde::{Deserialize, Serialize};

use crate::collective::{Algo, DType, Op, Proto};
use crate::error::{Error, Result};
use crate::model::comm_setup::CommSetup;

/// Schema id of fit.json.
pub const FIT_SCHEMA: &str = "collbench.fit/v1";

/// The whole file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitFile {
    /// Always [`FIT_SCHEMA`].
    pub schema: String,
    pub collbench_version: String,
    /// When the fit was made, RFC 3339 UTC.
    pub created: String,
    pub method: Method,
    /// The runs fitted (or, for a bundled profile, the public sources of its numbers).
    pub sources: Vec<Source>,
    /// One alpha-beta fit per measured curve.
    pub curves: Vec<CurveFit>,
    /// Algorithm-shaped models that predict any world size.
    pub models: Vec<WorldModel>,
    /// What could not be fitted, and why.
    pub notes: Vec<String>,
    /// Calls measured beside other groups' (`sweep --split`): their slowdown per size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowdowns: Vec<SlowdownCurve>,
}

/// How the numbers were obtained, so a reader can judge them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Method {
    /// E.g. "least squares on relative residuals, each size weighted equally".
    pub objective: String,
    /// E.g. "Huber IRLS, k = 1.345 on the MAD scale".
    pub robust: String,
    /// E.g. "cluster-robust (CR1, clusters = sizes), Student t".
    pub intervals: String,
    /// Confidence level of every `ci` (0.95).
    pub confidence: f64,
    /// E.g. "BIC on per-size medians".
    pub segments: String,
    pub max_segments: usize,
    pub min_sizes_per_segment: usize,
}

/// A fitted run (or a cited public source).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The results folder (or a citation).
    pub path: String,
    pub backend: String,
    pub transport: String,
    pub hostname: String,
    pub cpu_model: String,
    pub cores: usize,
    pub ranks: usize,
    pub nodes: usize,
    pub started: String,
    pub ended: Option<String>,
    pub collbench_version: String,
    /// Points (rows of summary.csv) in the run.
    pub points: usize,
    /// GPU power NVML measured during the run's collectives (its telemetry.csv), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_power: Option<SourcePower>,
}

/// GPU power over every point of a run, from its telemetry.csv.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SourcePower {
    /// Mean of the per-point, per-GPU means, weighted by their sample counts, W.
    pub power_w_mean: f64,
    /// Highest per-point maximum, W.
    pub power_w_max: f64,
    /// NVML samples behind the mean.
    pub samples: u64,
    /// GPU names seen, deduplicated.
    pub gpus: Vec<String>,
}

/// What one curve is: everything but the size.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CurveKey {
    pub backend: String,
    pub op: Op,
    pub algo: Algo,
    pub dtype: DType,
    pub world: usize,
    pub nodes: usize,
    pub in_place: bool,
    /// The NCCL protocol the points ran with; absent for backends without protocols. Last, so
    /// that curves sort as they did before protocols were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<Proto>,
    /// The NCCL communicators' registration and CTA settings; absent where nothing was set.
    #[serde(default, skip_serializing_if = "CommSetup::is_default")]
    pub comm: CommSetup,
    /// An alltoallv curve's traffic (summary.csv's `traffic`); absent for the other ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<String>,
}

impl CurveKey {
    /// The algorithm as tables name it: `ring`, or `ring/ll128` with a protocol, and the NCCL
    /// communicator setup where one was set (`ring/auto register local`).
    pub fn algo_label(&self) -> String {
        algo_label(self.algo, self.proto) + &self.comm.label()
    }
}

/// `ring`, or `ring/ll128` when the points ran with a protocol.
pub fn algo_label(algo: Algo, proto: Option<Proto>) -> String {
    match proto {
        Some(p) => format!("{algo}/{p}"),
        None => algo.to_string(),
    }
}

/// Preference among protocols when a reader must pick one: NCCL's own choice (`auto`, or no
/// protocol for backends without them) before a forced one.
pub fn proto_rank(proto: Option<Proto>) -> u8 {
    match proto {
        None | Some(Proto::Auto) => 0,
        Some(_) => 1,
    }
}

/// A parameter with its uncertainty.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub value: f64,
    /// Standard error (0 for a parameter held at its bound).
    pub stderr: f64,
    /// Confidence interval [low, high] at `Method::confidence`.
    pub ci: [f64; 2],
}

/// How well a model explains data.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// R² over per-size medians on the relative scale (weights 1/median²).
    pub r2: f64,
    /// Mean and largest |predicted − median| / median over the sizes (or size × world groups).
    pub rel_err_mean: f64,
    pub rel_err_max: f64,
    /// Samples fitted, and how many of them the robust fit down-weighted as outliers.
    pub samples: usize,
    pub downweighted: usize,
    /// Distinct groups (sizes, or size × world) fitted.
    pub groups: usize,
}

/// One regime of a curve: `T(S) = alpha + beta·S` for `min_bytes <= S <= max_bytes`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub alpha_us: Param,
    pub beta_ns_per_byte: Param,
    /// 1 / beta: the asymptotic algbw of the regime, GB/s (null when beta is 0).
    pub bandwidth_gbps: Option<f64>,
    pub quality: Quality,
}

/// Prediction error on held-out data.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Holdout {
    pub rel_err_mean: f64,
    pub rel_err_max: f64,
}

/// The fits of one curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CurveFit {
    #[serde(flatten)]
    pub key: CurveKey,
    /// Sizes measured.
    pub sizes: usize,
    /// One line over every size.
    pub line: Line,
    /// Leave-one-size-out prediction error of the single line (null with too few sizes).
    pub loso: Option<Holdout>,
    /// The chosen regimes, ascending in size (one entry when a single line is the better model).
    pub segments: Vec<Line>,
    /// BIC of the best segmentation with 1, 2, ... segments.
    pub bic: Vec<SegmentsBic>,
    /// Every size's measured time (median of its faster half) against the single line; absent
    /// in files written before it was added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<PointFit>,
    /// True when the line cannot be trusted: R² below zero or a size missed by more than 50%
    /// (a note in `notes` names the sizes). Absent (false) otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_noisy: bool,
}

/// One size of a curve against its single line.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointFit {
    pub bytes: u64,
    /// The median of the size's faster half of samples, µs.
    pub measured_us: f64,
    /// The line's time at this size, µs.
    pub line_us: f64,
    /// (line − measured) / measured.
    pub rel_err: f64,
}

/// One candidate segment count and its information criterion.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SegmentsBic {
    pub segments: usize,
    pub bic: f64,
}

/// A model of one op and algorithm across world sizes: `T = Σ coef_i(p, nodes, S) · param_i`,
/// coefficients defined by `form` (see `fit::forms` and docs/METHODOLOGY.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldModel {
    pub backend: String,
    pub op: Op,
    pub algo: Algo,
    pub dtype: DType,
    pub in_place: bool,
    /// The NCCL protocol of the curves fitted; absent for backends without protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<Proto>,
    /// The NCCL communicators' registration and CTA settings; absent where nothing was set.
    #[serde(default, skip_serializing_if = "CommSetup::is_default")]
    pub comm: CommSetup,
    /// An alltoallv model's traffic (summary.csv's `traffic`); absent for the other ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic: Option<String>,
    /// The form's name: ring, tree, two-level, nccl-ring, log-linear, ... (`fit::forms`).
    pub form: String,
    /// The formula in words, e.g. "2(p-1)·alpha + 2(p-1)/p·S·beta".
    pub formula: String,
    /// Parameters in the form's order; names carry units (alpha_us, beta_ns_per_byte, ...).
    pub params: Vec<NamedParam>,
    /// Parameter covariance in the same order and units (for prediction intervals).
    pub covariance: Vec<Vec<f64>>,
    /// Student t quantile for intervals from `covariance` (its degrees of freedom are
    /// groups − parameters).
    pub t_quantile: f64,
    /// World sizes (and node counts) the model was fitted on.
    pub worlds: Vec<usize>,
    pub nodes: Vec<usize>,
    pub quality: Quality,
    /// Error predicting each world size from a fit without it (empty with too few worlds).
    pub holdout: Vec<WorldHoldout>,
    /// Whether `fit` chose this form among the candidates fitted to the same curves (files
    /// written before candidates existed held one model per key: true).
    #[serde(default = "chosen")]
    pub selected: bool,
    /// The error predicting the largest world from the smaller ones; absent where the smaller
    /// ones cannot determine the form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extrapolation: Option<Extrapolation>,
    /// On the selected model: the candidates and their extrapolation errors, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<String>,
}

fn chosen() -> bool {
    true
}

/// How well a model fitted on the smaller worlds predicts the largest one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Extrapolation {
    /// The world (and its node count) held out: the largest fitted.
    pub world: usize,
    pub nodes: usize,
    /// The largest world of the fit that predicted it.
    pub from_world: usize,
    /// Mean and largest |predicted − median| / median over its sizes.
    pub rel_err_mean: f64,
    pub rel_err_max: f64,
    /// The error of the model's ratio applied to `from_world`'s measured medians (how
    /// `--predict` extrapolates when the fit has that curve; sizes measured at both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchored_rel_err_mean: Option<f64>,
    /// The same error for the naive guess that every size keeps the bus bandwidth it had at
    /// `from_world` (sizes measured at both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naive_rel_err_mean: Option<f64>,
}

/// A named parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedParam {
    pub name: String,
    #[serde(flatten)]
    pub param: Param,
}

/// Prediction error for one held-out world size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldHoldout {
    pub world: usize,
    pub nodes: usize,
    pub rel_err_mean: f64,
    pub rel_err_max: f64,
}

impl FitFile {
    /// Writes the file as pretty JSON, atomically (replacing what is there; `fit` checks first).
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| Error::Input {
            path: path.to_path_buf(),
            msg: format!("cannot encode the fit: {e}"),
        })?;
        text.push('\n');
        crate::output::file::write_atomic(path, text.as_bytes())
    }

    /// The cross-world model of an op and algorithm (out-of-place first, then in-place; NCCL's
    /// own protocol choice before a forced one), for `dtype` when given.
    pub fn model(&self, op: Op, algo: Algo, dtype: Option<DType>) -> Option<&WorldModel> {
        let matches =
            |m: &&WorldModel| m.op == op && m.algo == algo && dtype.map_or(true, |d| d == m.dtype);
        let mut found: Vec<&WorldModel> = self.models.iter().filter(matches).collect();
        found.sort_by_key(|m| {
            (
                m.in_place,
                m.spans_nodes(),
                !m.selected,
                proto_rank(m.proto),
            )
        });
        found.into_iter().next()
    }
}

impl Line {
    /// `alpha + beta·S` in µs for `bytes`.
    pub fn time_us(&self, bytes: f64) -> f64 {
        self.alpha_us.value + self.beta_ns_per_byte.value * bytes * 1e-3
    }
}

impl CurveFit {
    /// The regime for `bytes`: the first whose range reaches it (below the first, the first),
    /// above the last the last; the single line when the curve has no regimes.
    pub fn regime(&self, bytes: f64) -> &Line {
        self.segments
            .iter()
            .find(|s| bytes <= s.max_bytes as f64)
            .or(self.segments.last())
            .unwrap_or(&self.line)
    }
}

impl WorldModel {
    /// Whether the model was fitted on points across nodes (its form has node terms, or it
    /// learned the network from multi-node points all the same).
    pub fn spans_nodes(&self) -> bool {
        self.nodes.iter().any(|&n| n > 1)
    }

    /// The algorithm as tables name it, as [`CurveKey::algo_label`].
    pub fn algo_label(&self) -> String {
        algo_label(self.algo, self.proto) + &self.comm.label()
    }
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
