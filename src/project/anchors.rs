//! Published end-to-end training runs, projected as `collbench project` would project them, and
//! how far the projection lands from each (`collbench anchors`). The bundled list is
//! bench-configs/anchors.toml (each run's source, layout and published step time); a file of
//! the same form may replace it.

use std::path::Path;

use serde::Deserialize;

use super::calibration::Calibration;
use super::model::ModelSpec;
use super::plan::{project, Batch, Request};
use super::specs;
use super::step::StepOptions;
use crate::error::{Error, Result};

/// The bundled anchors.
const BUNDLED: &str = include_str!("../../bench-configs/anchors.toml");

/// The model files of bench-configs/models/ that the bundled anchors name, by their names.
const BUNDLED_MODELS: [(&str, &str); 5] = [
    (
        "gpt3-175b",
        include_str!("../../bench-configs/models/gpt3-175b.toml"),
    ),
    (
        "bloom-176b",
        include_str!("../../bench-configs/models/bloom-176b.toml"),
    ),
    (
        "llama3-405b",
        include_str!("../../bench-configs/models/llama3-405b.toml"),
    ),
    (
        "mt-nlg-530b",
        include_str!("../../bench-configs/models/mt-nlg-530b.toml"),
    ),
    (
        "megatron-1t",
        include_str!("../../bench-configs/models/megatron-1t.toml"),
    ),
];

/// The most anchors a file may hold, and the largest world and step it may give; batches and
/// sequences are bounded as `project`'s flags are (so no product of sizes overflows).
const MAX_ANCHORS: usize = 1000;
const MAX_WORLD: usize = 1 << 20;
const MAX_BATCH: usize = 1 << 20;
const MAX_SEQ: usize = 1 << 24;
const MAX_PER_GPU: usize = 1 << 16;
const MAX_STEP_S: f64 = 1e6;

/// An anchors file: `[[anchor]]` tables.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnchorsFile {
    anchor: Vec<Anchor>,
}

/// One published run.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    pub id: String,
    /// Runs of one model and layout family at several GPU counts share a series.
    #[serde(default)]
    pub series: Option<String>,
    /// Where the numbers come from: publication, table, setup.
    pub source: String,
    /// The bundled network profile of its GPU and fabric.
    pub profile: String,
    /// The training framework the run used (`megatron-lm`, `pytorch-fsdp`, ...): a calibration
    /// may be fitted per GPU and framework.
    #[serde(default)]
    pub framework: Option<String>,
    /// A model preset, a bundled model of bench-configs/models/, or a model file.
    pub model: String,
    #[serde(default = "one")]
    pub tp: usize,
    #[serde(default = "one")]
    pub pp: usize,
    /// Chunks per pipeline stage of an interleaved schedule (1: none).
    #[serde(default = "one")]
    pub vp: usize,
    pub world: usize,
    /// Sequences per step.
    pub global_batch: usize,
    /// Tokens per sequence [default: the model's].
    #[serde(default)]
    pub seq: Option<usize>,
    #[serde(default)]
    pub recompute: bool,
    /// FSDP re-shards parameters after forward (PyTorch FSDP's FULL_SHARD default).
    #[serde(default)]
    pub reshard: bool,
    /// The published (or derived) step time, seconds.
    pub step_s: f64,
    /// How `step_s` was derived where the source gives another number.
    #[serde(default)]
    pub derived: Option<String>,
    /// What differs between the run and its projection.
    #[serde(default)]
    pub note: Option<String>,
}

fn one() -> usize {
    1
}

impl Anchor {
    /// The run's framework; `unnamed` where the file does not say.
    pub fn framework(&self) -> &str {
        self.framework.as_deref().unwrap_or(UNNAMED_FRAMEWORK)
    }
}

/// The framework of anchors that name none.
pub const UNNAMED_FRAMEWORK: &str = "unnamed";

/// An anchor with its projection.
#[derive(Clone, Debug, PartialEq)]
pub struct Projected {
    pub anchor: Anchor,
    /// Sequence length used.
    pub seq: usize,
    pub step_s: f64,
    /// Whether the memory model says the layout fits (the run did).
    pub fits_memory: bool,
    pub memory_gb: f64,
}

impl Projected {
    /// Projected step time over published, minus one (negative: the projection is faster).
    pub fn error(&self) -> f64 {
        self.step_s / self.anchor.step_s - 1.0
    }

    /// Tokens per second per GPU, published and projected.
    pub fn tokens_per_s_per_gpu(&self) -> (f64, f64) {
        let tokens = (self.anchor.global_batch * self.seq) as f64 / self.anchor.world as f64;
        (tokens / self.anchor.step_s, tokens / self.step_s)
    }
}

/// The bundled anchors, or those of `path`.
pub fn load(path: Option<&Path>) -> Result<Vec<Anchor>> {
    let anchors = match path {
        None => parse(BUNDLED).map_err(|e| Error::usage(format!("bundled anchors: {e}")))?,
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| Error::Input {
                path: p.to_path_buf(),
                msg: e.to_string(),
            })?;
            parse(&text).map_err(|msg| Error::Input {
                path: p.to_path_buf(),
                msg,
            })?
        }
    };
    Ok(anchors)
}

/// The anchors of a file's text, checked: ids unique, every number within bounds.
pub fn parse(text: &str) -> std::result::Result<Vec<Anchor>, String> {
    let file: AnchorsFile = toml::from_str(text).map_err(|e| e.message().to_string())?;
    if file.anchor.is_empty() || file.anchor.len() > MAX_ANCHORS {
        return Err(format!(
            "{} anchors; give 1 to {MAX_ANCHORS} [[anchor]] tables",
            file.anchor.len()
        ));
    }
    for (i, a) in file.anchor.iter().enumerate() {
        check(a).map_err(|e| format!("anchor {}: {e}", a.id))?;
        if file.anchor[..i].iter().any(|b| b.id == a.id) {
            return Err(format!("anchor id {} is given twice", a.id));
        }
        // A fold is a series or an anchor in none: the two must not share a name.
        if let Some(s) = (a.series.as_deref()).filter(|s| file.anchor.iter().any(|b| b.id == *s)) {
            return Err(format!(
                "anchor {}: series {s} is also an anchor's id; name it apart",
                a.id
            ));
        }
    }
    Ok(file.anchor)
}

/// Whether `s` is a name an anchors file may give (and anchors.csv holds unquoted): letters,
/// digits, `-`, `_`, `.` and `/`.
pub fn is_name(s: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || "-_./".contains(c);
    !s.is_empty() && s.chars().all(word)
}

/// Each distinct item once, in the order it first appears.
pub fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// One anchor's numbers within bounds.
fn check(a: &Anchor) -> std::result::Result<(), String> {
    let names = [
        ("id", a.id.as_str()),
        ("series", a.series.as_deref().unwrap_or("-")),
        ("profile", a.profile.as_str()),
        ("framework", a.framework()),
        ("model", a.model.as_str()),
    ];
    if let Some((field, v)) = names.iter().find(|(_, v)| !is_name(v)) {
        return Err(format!(
            "{field} '{v}' is not a name of letters, digits, '-', '_', '.' and '/'"
        ));
    }
    let counts = [
        ("tp", a.tp, MAX_WORLD),
        ("pp", a.pp, MAX_WORLD),
        ("vp", a.vp, 64),
        ("world", a.world, MAX_WORLD),
        ("global_batch", a.global_batch, MAX_BATCH),
        ("seq", a.seq.unwrap_or(1), MAX_SEQ),
        (
            "sequences per GPU",
            a.global_batch.div_ceil(a.world.max(1)),
            MAX_PER_GPU,
        ),
    ];
    if let Some((name, v, max)) = counts.iter().find(|(_, v, max)| *v == 0 || v > max) {
        return Err(format!("{name} {v} is not between 1 and {max}"));
    }
    if a.world % (a.tp * a.pp) != 0 {
        return Err(format!(
            "world {} is not a multiple of tp {} x pp {}",
            a.world, a.tp, a.pp
        ));
    }
    if a.vp > 1 && a.pp == 1 {
        return Err(format!("vp {} needs pipeline stages (pp > 1)", a.vp));
    }
    if !(a.step_s > 0.0 && a.step_s <= MAX_STEP_S) {
        return Err(format!(
            "step_s {} is not a time in seconds above 0 and at most {MAX_STEP_S}",
            a.step_s
        ));
    }
    Ok(())
}

/// The model an anchor names: a bundled model file's, a preset, or a model file.
fn model_of(name: &str) -> Result<ModelSpec> {
    match BUNDLED_MODELS.iter().find(|(n, _)| *n == name.trim()) {
        Some((n, text)) => {
            let spec: ModelSpec = toml::from_str(text)
                .map_err(|e| Error::usage(format!("bundled model {n}: {}", e.message())))?;
            spec.validate()?;
            Ok(spec)
        }
        None => specs::model(name),
    }
}

/// The step options of a plain `collbench project` (the roofline, the default σ), with the
/// anchor's recomputation and re-sharding.
fn options(a: &Anchor, calibration: Calibration) -> StepOptions {
    StepOptions {
        reshard: a.reshard,
        recompute: a.recompute,
        virtual_stages: a.vp,
        calibration,
        ..StepOptions::default()
    }
}

/// Projects one anchor from its profile with `calibration`, as `collbench project --profile P --model M --tp T
/// --pp P --world-sizes W --global-batch B [--recompute] [--reshard]` would, timing its step even where
/// the memory model says it does not fit.
pub fn project_anchor(a: &Anchor, calibration: Calibration) -> Result<Projected> {
    let fit = specs::profile(&a.profile)?;
    let hardware = specs::profile_hardware(&a.profile).ok_or_else(|| {
        Error::usage(format!(
            "anchor {}: no hardware for profile {}",
            a.id, a.profile
        ))
    })?;
    let model = model_of(&a.model)?;
    let seq = a.seq.unwrap_or(model.seq_len);
    let req = Request {
        seq,
        model,
        hardware,
        worlds: vec![a.world],
        tps: vec![a.tp],
        pps: vec![a.pp],
        eps: vec![1],
        batch: Batch::Strong {
            global: a.global_batch,
        },
        microbatches: None,
        opts: options(a, calibration),
        comm_power_w: None,
        unfit_steps: true,
    };
    let named = |e: Error| Error::usage(format!("anchor {}: {e}", a.id));
    let p = project(&req, &fit).map_err(named)?;
    let row = p.rows.first().ok_or_else(|| {
        let why = p.notes.first().cloned().unwrap_or_default();
        Error::usage(format!("anchor {}: not projected: {why}", a.id))
    })?;
    let step_s = row.metrics.as_ref().map(|m| m.step_time_s);
    Ok(Projected {
        anchor: a.clone(),
        seq,
        step_s: step_s.unwrap_or(f64::NAN),
        fits_memory: row.fits_memory,
        memory_gb: row.memory_gb,
    })
}

/// How close a projection should land: within ±15% of the published step.
pub const GOAL: f64 = 0.15;

/// Projection errors (projected over published, minus one), summarised.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Errors {
    pub count: usize,
    pub mean_abs: f64,
    pub largest_abs: f64,
    pub lowest: f64,
    pub highest: f64,
    /// Errors within [`GOAL`].
    pub within_goal: usize,
}

impl Errors {
    pub fn of(errors: impl IntoIterator<Item = f64>) -> Errors {
        let mut e = Errors {
            count: 0,
            mean_abs: 0.0,
            largest_abs: 0.0,
            lowest: f64::INFINITY,
            highest: f64::NEG_INFINITY,
            within_goal: 0,
        };
        for x in errors {
            e.count += 1;
            e.mean_abs += x.abs();
            e.largest_abs = e.largest_abs.max(x.abs());
            (e.lowest, e.highest) = (e.lowest.min(x), e.highest.max(x));
            e.within_goal += usize::from(x.abs() <= GOAL);
        }
        e.mean_abs /= e.count.max(1) as f64;
        e
    }

    /// Closer than `other` both on average and at the largest miss: the rule a calibration
    /// must meet against the roofline on held-out runs to be kept by default.
    pub fn beats(&self, other: &Errors) -> bool {
        self.count > 0 && self.mean_abs < other.mean_abs && self.largest_abs < other.largest_abs
    }
}

/// A series: its anchors in world order and the change in per-GPU throughput from the
/// smallest world to the largest, published and projected.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub worlds: Vec<usize>,
    pub published_change: f64,
    pub projected_change: f64,
}

/// Every series of at least two anchors, in the order they first appear.
pub fn series(projected: &[Projected]) -> Vec<Series> {
    let names = first_seen(projected.iter().filter_map(|p| p.anchor.series.as_deref()));
    let of = |name: &str| {
        let mut runs: Vec<&Projected> = (projected.iter())
            .filter(|p| p.anchor.series.as_deref() == Some(name))
            .collect();
        runs.sort_by_key(|p| p.anchor.world);
        let (first, last) = (runs.first()?, runs.last().filter(|_| runs.len() > 1)?);
        let ((pub0, proj0), (pub1, proj1)) =
            (first.tokens_per_s_per_gpu(), last.tokens_per_s_per_gpu());
        Some(Series {
            name: name.to_string(),
            worlds: runs.iter().map(|p| p.anchor.world).collect(),
            published_change: pub1 / pub0 - 1.0,
            projected_change: proj1 / proj0 - 1.0,
        })
    };
    names.into_iter().filter_map(of).collect()
}

#[cfg(test)]
#[path = "anchors_tests.rs"]
mod tests;
