//! Expected performance without a hand-written threshold: a profile of cited bus-bandwidth
//! floors (bench-configs/expect/*.toml, bundled, or a file of one's own) turned into criteria
//! for the points a run measured. Each row names ops, the busbw public numbers say a healthy
//! system reaches and the size from which it saturates; a point at or past that size must reach
//! the busbw less `--margin`. Smaller points are not judged on bandwidth (the curve has not
//! saturated); a run whose largest size is below the saturation size is judged for connectivity
//! and correct results only, and says so. Per-NIC profiles (network rates) scale by `--nics`,
//! the NICs per node, and apply to runs across nodes; per-node profiles to runs inside one.
//! Keys in docs/ACCEPTANCE.md ("Expected performance").

use std::path::Path;

use super::criteria::{Check, Criterion, ExpectSpec, Selector, Stat};
use super::expect_model::ExpectModel;
pub use super::expect_profile::{Per, Profile, Row, BUNDLED};
use super::measure::GroupKey;
use crate::error::{Error, Result};
use crate::units::format_size;

/// `--expect` with its margin and NIC count.
#[derive(Clone, Debug)]
pub struct Expect {
    pub profiles: Vec<Profile>,
    /// Network profiles and fits: an expected time and busbw at every point.
    pub models: Vec<ExpectModel>,
    /// The share below the expected busbw still accepted (0.1: 90% of it).
    pub margin: f64,
    /// NICs per node, for per-NIC profiles.
    pub nics: Option<usize>,
}

impl Expect {
    /// `--expect`, `--margin` and `--nics` checked and loaded; `None` without `--expect`.
    /// `sourced`: a criteria file or `--run` folders say what is judged.
    pub fn from_flags(
        names: &[String],
        (margin, nics): (f64, Option<usize>),
        sourced: bool,
    ) -> Result<Option<Expect>> {
        if names.is_empty() {
            return match nics {
                Some(_) => Err(Error::usage("--nics goes with a per-NIC --expect profile")),
                None => Ok(None),
            };
        }
        check_margin(margin, "--margin")?;
        if !sourced {
            return Err(Error::usage(
                "--expect without --criteria judges existing folders: add --run DIR, or a \
                 --criteria FILE whose [sweep] says what to measure",
            ));
        }
        Expect::load(names, margin, nics).map(Some)
    }

    /// A criteria file's `[expect]`: profile paths relative to the file, errors naming it.
    pub fn from_file(spec: &ExpectSpec, file: &Path) -> Result<Option<Expect>> {
        if spec.nics.is_some_and(|n| !(1..=64).contains(&n)) {
            return Err(Error::Input {
                path: file.to_path_buf(),
                msg: format!(
                    "[expect]: nics {} is not from 1 to 64",
                    spec.nics.unwrap_or(0)
                ),
            });
        }
        let base = file.parent().unwrap_or(Path::new(""));
        let names: Vec<String> = spec
            .profiles
            .iter()
            .map(|n| match bundled(n) || Path::new(n).is_absolute() {
                true => n.clone(),
                false => base.join(n).display().to_string(),
            })
            .collect();
        let in_file = |e: Error| match e {
            Error::Usage(m) => Error::Input {
                path: file.to_path_buf(),
                msg: format!("[expect]: {m}"),
            },
            other => other,
        };
        check_margin(spec.margin, "margin").map_err(in_file)?;
        Expect::load_as(&names, spec.margin, spec.nics, "nics = N")
            .map_err(in_file)
            .map(Some)
    }

    /// Loads the profiles and checks that a per-NIC one has its NIC count.
    pub fn load(names: &[String], margin: f64, nics: Option<usize>) -> Result<Expect> {
        Expect::load_as(names, margin, nics, "--nics N")
    }

    /// [`Expect::load`], the NIC count asked for as `nics_key` says where it goes.
    fn load_as(
        names: &[String],
        margin: f64,
        nics: Option<usize>,
        nics_key: &str,
    ) -> Result<Expect> {
        let (models, profiles): (Vec<&String>, Vec<&String>) =
            names.iter().partition(|n| ExpectModel::names_one(n));
        let models = (models.into_iter())
            .map(|n| ExpectModel::load(n))
            .collect::<Result<Vec<_>>>()?;
        let profiles = (profiles.into_iter())
            .map(|n| Profile::load(n))
            .collect::<Result<Vec<_>>>()?;
        if let Some(p) = profiles
            .iter()
            .find(|p| p.per == Per::Nic && nics.is_none())
        {
            return Err(Error::usage(format!(
                "expect profile {}: its rates are per NIC; give {nics_key}, the NICs of each node",
                p.name
            )));
        }
        Ok(Expect {
            profiles,
            models,
            margin,
            nics,
        })
    }

    /// The criteria for the points measured (`keys`), and a note for every row that no
    /// measured point reaches: correct results everywhere, then each row's busbw floor per
    /// node count it applies to.
    pub fn criteria(&self, keys: &[GroupKey]) -> (Vec<Criterion>, Vec<String>) {
        let mut criteria = vec![correct()];
        let mut notes = Vec::new();
        for p in &self.profiles {
            for (i, r) in p.rows.iter().enumerate() {
                let nodes = applicable_nodes(p.per, r, keys);
                for &n in &nodes {
                    criteria.push(self.floor(p, (i, r), n));
                }
                if nodes.is_empty() {
                    notes.push(unjudged(p, r, keys));
                }
            }
        }
        for m in &self.models {
            let (more, why) = m.criteria(keys, self.margin);
            criteria.extend(more);
            notes.extend(why);
        }
        (criteria, notes)
    }

    /// Row `i`'s busbw floor at `nodes` nodes, on the median of the repeats.
    fn floor(&self, p: &Profile, (i, r): (usize, &Row), nodes: usize) -> Criterion {
        let scale = match p.per {
            Per::Node => 1.0,
            Per::Nic => self.nics.unwrap_or(1) as f64,
        };
        let min = r.busbw_gbps * scale * (1.0 - self.margin);
        Criterion {
            name: format!("expect-{}-{}-{}nodes", p.name, i + 1, nodes),
            select: Selector {
                ops: r.ops.clone(),
                algos: r.algos.clone(),
                protos: Vec::new(),
                dtypes: Vec::new(),
                worlds: Vec::new(),
                nodes: Some(nodes),
                in_place: None,
                min_bytes: r.from_bytes,
                max_bytes: usize::MAX,
            },
            stat: Stat::Median,
            checks: vec![Check::MinBusbw(min)],
            reference: None,
        }
    }
}

/// Whether `name` is bundled (a busbw profile or a network profile), not a file.
fn bundled(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase();
    BUNDLED.iter().any(|(b, _)| *b == name)
        || crate::fit::profiles::profile_names().contains(&name.as_str())
}

/// A margin within 0 to 0.9; the error names it as `key` (`--margin`, or `margin` in a file).
pub fn check_margin(margin: f64, key: &str) -> Result<()> {
    if (0.0..=0.9).contains(&margin) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "{key} {margin}: give a share from 0 to 0.9 (0.1 accepts 90% of a busbw, 110% of a time)"
    )))
}

/// Every point computes exact results.
fn correct() -> Criterion {
    Criterion {
        name: "expect-correct".into(),
        select: Selector {
            ops: Vec::new(),
            algos: Vec::new(),
            protos: Vec::new(),
            dtypes: Vec::new(),
            worlds: Vec::new(),
            nodes: None,
            in_place: None,
            min_bytes: 0,
            max_bytes: usize::MAX,
        },
        stat: Stat::Worst,
        checks: vec![Check::MaxWrong(0)],
        reference: None,
    }
}

fn row_covers(r: &Row, k: &GroupKey) -> bool {
    r.ops.contains(&k.op) && (r.algos.is_empty() || r.algos.contains(&k.algo))
}

/// The node counts a row judges: those of measured points of its ops at or past its size,
/// one node for a per-node profile, two or more for a per-NIC one.
fn applicable_nodes(per: Per, r: &Row, keys: &[GroupKey]) -> Vec<usize> {
    let fits = |n: usize| match per {
        Per::Node => n == 1,
        Per::Nic => n >= 2,
    };
    let mut nodes: Vec<usize> = keys
        .iter()
        .filter(|k| row_covers(r, k) && k.bytes >= r.from_bytes && fits(k.nodes))
        .map(|k| k.nodes)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

/// Why a row judged nothing: connectivity only (measured, but not to its size), the wrong
/// kind of run (one node for a per-NIC row, several for a per-node one), or none of its ops.
fn unjudged(p: &Profile, r: &Row, keys: &[GroupKey]) -> String {
    let ops: Vec<String> = r.ops.iter().map(|o| o.to_string()).collect();
    let what = format!("{} {} ({})", p.name, ops.join("/"), r.source);
    let covered: Vec<&GroupKey> = keys.iter().filter(|k| row_covers(r, k)).collect();
    let largest = covered.iter().map(|k| k.bytes).max();
    match largest {
        None => format!("expect {what}: none of its ops was measured; not judged"),
        Some(b) if b < r.from_bytes => format!(
            "expect {what}: connectivity only: measured up to {}, below {} where {} GB/s busbw \
             is expected; bandwidth not judged (sweep to {} or more to judge it)",
            format_size(b),
            format_size(r.from_bytes),
            r.busbw_gbps,
            format_size(r.from_bytes)
        ),
        Some(_) => format!(
            "expect {what}: its rates are {}; this run has no such points",
            match p.per {
                Per::Node => "inside one node",
                Per::Nic => "across nodes (2 or more)",
            }
        ),
    }
}

#[cfg(test)]
#[path = "expect_tests.rs"]
mod tests;
