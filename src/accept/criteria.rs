//! The criteria file: a `[sweep]` table (what to measure) and `[[criterion]]` tables (what the
//! measured points must meet). Parsed strictly: unknown keys, impossible thresholds and empty
//! windows are refused with one line naming the file, the criterion and the key.
//! The keys are documented in docs/ACCEPTANCE.md.

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use super::selector::Selector;
use super::sweep_spec::SweepSpec;
pub use super::thresholds::{Bound, Check, Stat, THRESHOLD_KEYS};
use crate::error::{Error, Result};
use crate::fit::schema::FitFile;
use crate::units::{format_size, parse_list, parse_size};

/// A criteria file, read and checked.
#[derive(Clone, Debug)]
pub struct Criteria {
    /// The file it was read from.
    pub path: PathBuf,
    /// `name`, or the file's stem.
    pub name: String,
    /// What to sweep when no `--run` folders are given.
    pub sweep: Option<SweepSpec>,
    pub criteria: Vec<Criterion>,
    /// `[expect]`: `--expect` written in the file (docs/ACCEPTANCE.md).
    pub expect: Option<ExpectSpec>,
}

/// The `[expect]` table: profiles (bundled names, or paths relative to the criteria file),
/// margin and NICs per node, checked where they are loaded.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSpec {
    pub profiles: Vec<String>,
    #[serde(default = "default_margin")]
    pub margin: f64,
    pub nics: Option<usize>,
}

fn default_margin() -> f64 {
    0.1
}

/// One `[[criterion]]`: which points it applies to, the statistic across repeats, and the
/// thresholds every selected point must meet.
#[derive(Clone, Debug)]
pub struct Criterion {
    pub name: String,
    pub select: Selector,
    pub stat: Stat,
    pub checks: Vec<Check>,
    /// The reference fit of `max_fit_deviation` / `max_fit_slowdown`.
    pub reference: Option<Reference>,
}

/// A reference fit.json and where it came from.
#[derive(Clone, Debug)]
pub struct Reference {
    pub path: PathBuf,
    pub fit: FitFile,
}

/// The file as written; every key is optional here and checked in [`Criteria::from_raw`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Option<String>,
    description: Option<String>,
    sweep: Option<SweepSpec>,
    expect: Option<ExpectSpec>,
    #[serde(default)]
    criterion: Vec<RawCriterion>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCriterion {
    name: Option<String>,
    op: Option<String>,
    algo: Option<String>,
    proto: Option<String>,
    dtype: Option<String>,
    world: Option<toml::Value>,
    nodes: Option<i64>,
    in_place: Option<bool>,
    min_bytes: Option<toml::Value>,
    max_bytes: Option<toml::Value>,
    stat: Option<String>,
    min_busbw_gbps: Option<f64>,
    max_time_us: Option<f64>,
    max_cv: Option<f64>,
    max_rank_skew: Option<f64>,
    max_node_skew: Option<f64>,
    max_slowest_bias: Option<f64>,
    max_node_slowest_bias: Option<f64>,
    max_drift: Option<f64>,
    max_fit_deviation: Option<f64>,
    max_fit_slowdown: Option<f64>,
    reference_fit: Option<String>,
    max_wrong: Option<i64>,
}

/// The most criteria one file may hold: each may load a reference fit and is judged at every
/// point it selects, so the count bounds memory and time.
pub const MAX_CRITERIA: usize = 1000;

impl Criteria {
    /// Reads and checks a criteria file. Every error is one line naming the file.
    pub fn load(path: &Path) -> Result<Criteria> {
        let text =
            crate::input::read_text_capped(path, crate::input::MAX_SPEC_BYTES, "criteria file")?;
        Criteria::parse(&text, path)
    }

    /// No criterion and no sweep: what `--expect` alone fills, named `name`.
    pub fn empty(path: &Path, name: &str) -> Criteria {
        Criteria {
            path: path.to_path_buf(),
            name: name.into(),
            sweep: None,
            criteria: Vec::new(),
            expect: None,
        }
    }

    /// Parses criteria text; `path` names the file in errors and anchors `reference_fit`.
    pub fn parse(text: &str, path: &Path) -> Result<Criteria> {
        let bad = |msg: String| Error::Input {
            path: path.to_path_buf(),
            msg,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| bad(toml_error(text, &e)))?;
        Criteria::from_raw(raw, path).map_err(bad)
    }

    fn from_raw(raw: RawFile, path: &Path) -> Result<Criteria, String> {
        let _ = raw.description;
        if raw.criterion.is_empty() && raw.expect.is_none() {
            return Err(
                "no [[criterion]] or [expect] table; add one (see docs/ACCEPTANCE.md)".into(),
            );
        }
        if raw.expect.as_ref().is_some_and(|e| e.profiles.is_empty()) {
            return Err("[expect] profiles = [] names no profile".into());
        }
        if raw.criterion.len() > MAX_CRITERIA {
            return Err(format!(
                "{} [[criterion]] tables; at most {MAX_CRITERIA} (a criterion selects many \
                 points at once: widen its selector instead)",
                raw.criterion.len()
            ));
        }
        if let Some(s) = &raw.sweep {
            s.check().map_err(|e| format!("[sweep]: {e}"))?;
        }
        let base = path.parent().unwrap_or(Path::new(""));
        let mut criteria: Vec<Criterion> = Vec::new();
        let mut names = std::collections::HashSet::new();
        for (i, rc) in raw.criterion.into_iter().enumerate() {
            let c = criterion(rc, i, base)?;
            if !names.insert(c.name.clone()) {
                return Err(format!(
                    "criterion '{}' is named twice; give each criterion its own name",
                    c.name
                ));
            }
            criteria.push(c);
        }
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        Ok(Criteria {
            path: path.to_path_buf(),
            name: raw.name.or(stem).unwrap_or_else(|| "criteria".into()),
            sweep: raw.sweep,
            criteria,
            expect: raw.expect,
        })
    }
}

/// A toml error as one line: `line N: message`.
pub(super) fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim().replace('\n', "; ");
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {msg}")
        }
        None => msg,
    }
}

/// Checks one criterion; errors name it (by name, or by position when it has none).
fn criterion(rc: RawCriterion, index: usize, base: &Path) -> Result<Criterion, String> {
    let label = match &rc.name {
        Some(n) => format!("criterion '{n}'"),
        None => format!("criterion #{}", index + 1),
    };
    let at = |e: String| format!("{label}: {e}");
    if rc.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return Err(at(
            "name is empty; give it a name or leave the key out".into()
        ));
    }
    let select = selector(&rc).map_err(at)?;
    let stat = match &rc.stat {
        None => Stat::Median,
        Some(s) => Stat::parse(s).ok_or_else(|| {
            at(format!(
                "stat '{s}' is not one of median, mean, min, max, worst"
            ))
        })?,
    };
    let checks = checks(&rc).map_err(at)?;
    let reference = reference(&rc, &checks, base).map_err(at)?;
    Ok(Criterion {
        name: rc
            .name
            .unwrap_or_else(|| format!("criterion-{}", index + 1)),
        select,
        stat,
        checks,
        reference,
    })
}

fn selector(rc: &RawCriterion) -> Result<Selector, String> {
    let sel = Selector {
        ops: names("op", &rc.op)?,
        algos: names("algo", &rc.algo)?,
        protos: names("proto", &rc.proto)?,
        dtypes: names("dtype", &rc.dtype)?,
        worlds: worlds(rc.world.as_ref())?,
        nodes: match rc.nodes {
            None => None,
            Some(n) if n >= 1 => Some(n as usize),
            Some(n) => return Err(format!("nodes {n} is not a positive number of hosts")),
        },
        in_place: rc.in_place,
        min_bytes: size("min_bytes", rc.min_bytes.as_ref())?.unwrap_or(0),
        max_bytes: size("max_bytes", rc.max_bytes.as_ref())?.unwrap_or(usize::MAX),
    };
    if sel.min_bytes > sel.max_bytes {
        return Err(format!(
            "min_bytes {} is larger than max_bytes {}: the window holds no size; give min_bytes <= max_bytes",
            format_size(sel.min_bytes),
            format_size(sel.max_bytes)
        ));
    }
    Ok(sel)
}

/// A comma list of names (`"allreduce,allgather"`); absent matches anything.
fn names<T>(key: &str, v: &Option<String>) -> Result<Vec<T>, String>
where
    T: std::str::FromStr<Err = Error> + PartialEq,
{
    match v {
        None => Ok(vec![]),
        Some(s) if s.trim().is_empty() => Err(format!("{key} is empty; leave it out to match any")),
        Some(s) => parse_list(s).map_err(|e| format!("{key}: {e}")),
    }
}

/// `world = 4` or `world = [2, 4]`.
fn worlds(v: Option<&toml::Value>) -> Result<Vec<usize>, String> {
    let one = |x: &toml::Value| match x.as_integer() {
        Some(n) if n >= 1 => crate::physical::WORLD
            .check("world", n as u64)
            .map(|n| n as usize),
        _ => Err(format!("world {x} is not a positive number of ranks")),
    };
    match v {
        None => Ok(vec![]),
        Some(toml::Value::Array(items)) if items.is_empty() => {
            Err("world = [] matches nothing; leave it out to match any world size".into())
        }
        Some(toml::Value::Array(items)) => items.iter().map(one).collect(),
        Some(x) => one(x).map(|n| vec![n]),
    }
}

/// A size given as a number of bytes or a string with a binary suffix (`"64M"`).
fn size(key: &str, v: Option<&toml::Value>) -> Result<Option<usize>, String> {
    match v {
        None => Ok(None),
        Some(toml::Value::Integer(n)) if *n >= 0 => Ok(Some(*n as usize)),
        Some(toml::Value::Integer(n)) => {
            Err(format!("{key} {n} is negative; give a size in bytes"))
        }
        Some(toml::Value::String(s)) => parse_size(s).map(Some).map_err(|e| format!("{key}: {e}")),
        Some(x) => Err(format!(
            "{key} {x} is not a size; give bytes (65536) or a string with a suffix (\"64K\")"
        )),
    }
}

/// The thresholds in file order, each checked for being possible.
fn checks(rc: &RawCriterion) -> Result<Vec<Check>, String> {
    let mut out = Vec::new();
    let mut push = |key: &str, v: Option<f64>, positive: bool, make: fn(f64) -> Check| {
        let Some(x) = v else { return Ok(()) };
        if !x.is_finite() || x < 0.0 || (positive && x == 0.0) {
            let want = if positive {
                "a positive"
            } else {
                "a non-negative"
            };
            return Err(format!(
                "{key} = {x} is impossible; give {want} finite number"
            ));
        }
        out.push(make(x));
        Ok(())
    };
    push("min_busbw_gbps", rc.min_busbw_gbps, true, Check::MinBusbw)?;
    push("max_time_us", rc.max_time_us, true, Check::MaxTime)?;
    push("max_cv", rc.max_cv, false, Check::MaxCv)?;
    push("max_rank_skew", rc.max_rank_skew, false, Check::MaxRankSkew)?;
    push("max_node_skew", rc.max_node_skew, false, Check::MaxNodeSkew)?;
    push(
        "max_slowest_bias",
        rc.max_slowest_bias,
        false,
        Check::MaxSlowestBias,
    )?;
    push(
        "max_node_slowest_bias",
        rc.max_node_slowest_bias,
        false,
        Check::MaxNodeSlowestBias,
    )?;
    push("max_drift", rc.max_drift, false, Check::MaxDrift)?;
    push(
        "max_fit_deviation",
        rc.max_fit_deviation,
        false,
        Check::MaxFitDeviation,
    )?;
    push(
        "max_fit_slowdown",
        rc.max_fit_slowdown,
        false,
        Check::MaxFitSlowdown,
    )?;
    match rc.max_wrong {
        Some(n) if n < 0 => {
            return Err(format!(
                "max_wrong = {n} is impossible; give 0 (or a positive count)"
            ))
        }
        Some(n) => out.push(Check::MaxWrong(n as u64)),
        None => {}
    }
    if out.is_empty() {
        return Err(format!(
            "states no threshold; give at least one of {THRESHOLD_KEYS}"
        ));
    }
    Ok(out)
}

/// Loads `reference_fit` (relative to the criteria file) when a fit threshold needs it.
fn reference(
    rc: &RawCriterion,
    checks: &[Check],
    base: &Path,
) -> Result<Option<Reference>, String> {
    let needs = checks.iter().any(|c| c.needs_fit());
    match (&rc.reference_fit, needs) {
        (None, false) => Ok(None),
        (None, true) => Err(
            "max_fit_deviation and max_fit_slowdown need reference_fit = \"path/to/fit.json\""
                .into(),
        ),
        (Some(_), false) => Err(
            "reference_fit is given but no max_fit_deviation or max_fit_slowdown uses it".into(),
        ),
        (Some(p), true) => {
            let path = base.join(p);
            let fit = FitFile::read(&path).map_err(|e| format!("reference_fit: {e}"))?;
            Ok(Some(Reference { path, fit }))
        }
    }
}

#[cfg(test)]
#[path = "criteria_tests.rs"]
mod tests;
