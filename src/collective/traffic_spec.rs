//! The alltoallv traffic a user asks for, as one word (`--traffic SPEC`), before any file is
//! read: nccl-tests' patterns under the names of their variables, a CSV of fractions, or the
//! seeded routing model.
//!
//! | spec | traffic |
//! | --- | --- |
//! | `uniform` | every peer the same (nccl-tests' spread 0) |
//! | `spread` or `spread=S` | nccl-tests' distance-weighted spread, S from 0 to 1 (default 1, as `NCCL_TESTS_ALLTOALLV_SPREAD`) |
//! | `matrix=PATH` or `matrix=PATH,scale=X` | nccl-tests' bytes matrix (`NCCL_TESTS_ALLTOALLV_MATRIX_FILE`, `..._MATRIX_SCALE`) |
//! | `fractions=PATH` | a CSV of each rank's shares of its sends |
//! | `moe=TOKENS:EXPERTS:TOP_K:ZIPF` or `...:SEED` | the routing model ([`super::routing`]), seed 0 by default |
//!
//! Pure: building the traffic takes the reader of files from the caller.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::routing::Routing;
use super::traffic::{parse_bytes_matrix, parse_fraction_csv, spread, Traffic};

/// What `--traffic` names.
#[derive(Clone, Debug, PartialEq)]
pub enum TrafficSpec {
    Spread(f64),
    Matrix { path: PathBuf, scale: f64 },
    Fractions { path: PathBuf },
    Moe(Routing),
}

/// The forms, for messages.
pub const FORMS: &str = "uniform, spread[=S], matrix=PATH[,scale=X], fractions=PATH, \
     moe=TOKENS:EXPERTS:TOP_K:ZIPF[:SEED]";

impl FromStr for TrafficSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<TrafficSpec, String> {
        let bad = |why: &str| format!("traffic {s:?}: {why}; give one of {FORMS}");
        let (kind, value) = match s.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v)),
            None => (s.trim(), None),
        };
        match (kind, value) {
            ("uniform", None) => Ok(TrafficSpec::Spread(0.0)),
            ("spread", None) => Ok(TrafficSpec::Spread(1.0)),
            ("spread", Some(v)) => {
                let x: f64 = v.trim().parse().map_err(|_| bad("S is not a number"))?;
                spread(x).map_err(|e| bad(&e))?;
                Ok(TrafficSpec::Spread(x))
            }
            ("matrix", Some(v)) => matrix(v).map_err(|e| bad(&e)),
            ("fractions", Some(v)) if !v.trim().is_empty() => Ok(TrafficSpec::Fractions {
                path: PathBuf::from(v.trim()),
            }),
            ("moe", Some(v)) => moe(v).map_err(|e| bad(&e)),
            _ => Err(bad("not a form collbench knows")),
        }
    }
}

/// `PATH` or `PATH,scale=X`.
fn matrix(v: &str) -> Result<TrafficSpec, String> {
    let (path, scale) = match v.rsplit_once(",scale=") {
        Some((p, x)) => {
            let x: f64 = x.trim().parse().map_err(|_| "scale is not a number")?;
            if !(x.is_finite() && x > 0.0) {
                return Err(format!("scale {x} is not a positive number"));
            }
            (p, x)
        }
        None => (v, 1.0),
    };
    if path.trim().is_empty() {
        return Err("no matrix file".into());
    }
    Ok(TrafficSpec::Matrix {
        path: PathBuf::from(path.trim()),
        scale,
    })
}

/// `TOKENS:EXPERTS:TOP_K:ZIPF[:SEED]`.
fn moe(v: &str) -> Result<TrafficSpec, String> {
    let parts: Vec<&str> = v.split(':').map(str::trim).collect();
    if !(4..=5).contains(&parts.len()) {
        return Err(format!("moe takes 4 or 5 values, not {}", parts.len()));
    }
    let count = |i: usize, name: &str| {
        parts[i]
            .parse::<usize>()
            .map_err(|_| format!("{name} {:?} is not a whole number", parts[i]))
    };
    let zipf: f64 = parts[3]
        .parse()
        .map_err(|_| format!("zipf {:?} is not a number", parts[3]))?;
    let seed = match parts.get(4) {
        Some(s) => s
            .parse()
            .map_err(|_| format!("seed {s:?} is not a whole number"))?,
        None => 0,
    };
    let r = Routing {
        tokens: count(0, "tokens")?,
        experts: count(1, "experts")?,
        top_k: count(2, "top_k")?,
        zipf,
        seed,
    };
    // What does not depend on the ranks is checked now (at 2 ranks, the fewest it runs at).
    r.check(2)?;
    Ok(TrafficSpec::Moe(r))
}

impl TrafficSpec {
    /// How the pattern is recorded with each point: `spread 0.5`, `matrix t.txt x2`, ...
    pub fn label(&self) -> String {
        // A label is a CSV field: no comma, quote or line break.
        let name = |p: &Path| {
            let name = (p.file_name())
                .map_or_else(|| p.display().to_string(), |f| f.to_string_lossy().into());
            name.replace([',', '"', '\n', '\r'], "_")
        };
        match self {
            TrafficSpec::Spread(s) if *s == 0.0 => "uniform".into(),
            TrafficSpec::Spread(s) => format!("spread {s}"),
            TrafficSpec::Matrix { path, scale } if *scale == 1.0 => {
                format!("matrix {}", name(path))
            }
            TrafficSpec::Matrix { path, scale } => format!("matrix {} x{scale}", name(path)),
            TrafficSpec::Fractions { path } => format!("fractions {}", name(path)),
            TrafficSpec::Moe(r) => format!(
                "moe tokens {} experts {} top_k {} zipf {} seed {}",
                r.tokens, r.experts, r.top_k, r.zipf, r.seed
            ),
        }
    }

    /// The router a [`TrafficSpec::label`] of the routing model names (as fit.json keeps it);
    /// `None` for other labels.
    pub fn routing_of_label(label: &str) -> Option<Routing> {
        let words: Vec<&str> = label.split_whitespace().collect();
        let names = ["moe", "tokens", "experts", "top_k", "zipf", "seed"];
        let named = (words.len() == 11)
            && (names.iter().enumerate())
                .all(|(i, n)| words[if i == 0 { 0 } else { 2 * i - 1 }] == *n);
        if !named {
            return None;
        }
        let r = Routing {
            tokens: words[2].parse().ok()?,
            experts: words[4].parse().ok()?,
            top_k: words[6].parse().ok()?,
            zipf: words[8].parse().ok()?,
            seed: words[10].parse().ok()?,
        };
        r.check(2).ok().map(|_| r)
    }

    /// Reads the spec's file, if it names one, into a source for any world size.
    pub fn read(
        &self,
        read: &dyn Fn(&Path) -> Result<String, String>,
    ) -> Result<TrafficSource, String> {
        let at = |path: &Path, e: String| format!("{}: {e}", path.display());
        let pattern = match self {
            TrafficSpec::Spread(s) => Pattern::Fixed(spread(*s)?),
            TrafficSpec::Matrix { path, scale } => {
                Pattern::Fixed(parse_bytes_matrix(&read(path)?, *scale).map_err(|e| at(path, e))?)
            }
            TrafficSpec::Fractions { path } => {
                Pattern::Fixed(parse_fraction_csv(&read(path)?).map_err(|e| at(path, e))?)
            }
            TrafficSpec::Moe(r) => Pattern::Moe(*r),
        };
        // Two files of one name (or one file edited) are told apart by their cells.
        let label = match &pattern {
            Pattern::Fixed(t @ (Traffic::Bytes { .. } | Traffic::Fractions { .. })) => {
                format!("{} #{:08x}", self.label(), cells_digest(t) >> 32)
            }
            _ => self.label(),
        };
        Ok(TrafficSource { label, pattern })
    }
}

/// A digest of a matrix's dimension and cells, as parsed (so layout and comments do not count).
fn cells_digest(t: &Traffic) -> u64 {
    let mut bytes = Vec::new();
    match t {
        Traffic::Bytes { dim, cells } => {
            bytes.extend((*dim as u64).to_le_bytes());
            cells
                .iter()
                .for_each(|&c| bytes.extend((c as u64).to_le_bytes()));
        }
        Traffic::Fractions { dim, cells } => {
            bytes.extend((*dim as u64).to_le_bytes());
            cells
                .iter()
                .for_each(|c| bytes.extend(c.to_bits().to_le_bytes()));
        }
        Traffic::Spread(s) => bytes.extend(s.to_bits().to_le_bytes()),
    }
    crate::digest::fnv1a64(&bytes)
}

/// A `--traffic` with its file read: what a plan needs to size and run alltoallv at any world
/// size, sent to rank processes with the sweep's options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrafficSource {
    /// How the pattern is recorded with each point ([`TrafficSpec::label`]).
    pub label: String,
    pattern: Pattern,
}

/// A matrix or spread holds at every world it describes; the routing model is drawn per world.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Pattern {
    Fixed(Traffic),
    Moe(Routing),
}

impl TrafficSource {
    /// nccl-tests' default: its distance-weighted spread 1.
    pub fn nccl_tests_default() -> TrafficSource {
        TrafficSource {
            label: TrafficSpec::Spread(1.0).label(),
            pattern: Pattern::Fixed(Traffic::Spread(1.0)),
        }
    }

    /// The traffic among `p` ranks, or why the pattern cannot describe them.
    pub fn at(&self, p: usize) -> Result<Traffic, String> {
        let t = match &self.pattern {
            Pattern::Fixed(t) => t.clone(),
            Pattern::Moe(r) => r.traffic(p)?,
        };
        t.check_ranks(p)?;
        Ok(t)
    }
}

#[cfg(test)]
#[path = "traffic_spec_tests.rs"]
mod tests;
