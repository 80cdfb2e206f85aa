//! Expected performance from a model: a bundled network profile (bench-configs/profiles:
//! public hardware numbers and NCCL's tuning constants as a fit, the ones `collbench project`
//! uses) or a fit.json of one's own (`collbench fit` of runs known to be good), turned into an
//! expected time and busbw at every measured point of 2 or more ranks, at its size, world and
//! node count. A point is judged on bandwidth where the model's curve has saturated there (its
//! busbw at least [`SATURATED`] of its busbw at [`ASYMPTOTE_BYTES`]), on time below: small
//! messages are latency, and a busbw floor would fail them on a link that is fine.

use std::collections::BTreeSet;
use std::path::Path;

use super::criteria::{Check, Criterion, Selector, Stat};
use super::judge::{curve_time_us, query_of};
use super::measure::GroupKey;
use crate::error::Result;
use crate::fit::predict::{predict, Prediction, Query};
use crate::fit::profiles::{profile, profile_names};
use crate::fit::schema::FitFile;

/// The share of its large-message busbw from which the model's curve counts as saturated.
pub const SATURATED: f64 = 0.9;

/// The size whose predicted busbw stands for the curve's peak (1 TiB: past every real call).
pub const ASYMPTOTE_BYTES: usize = 1 << 40;

/// A model to expect from, and the name it goes by in criteria and notes.
#[derive(Clone, Debug)]
pub struct ExpectModel {
    pub name: String,
    pub fit: FitFile,
}

/// Whether `name` is a path ending in `.json` (any case).
fn is_json(name: &str) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// What the model expects at one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expected {
    pub time_us: f64,
    pub busbw_gbps: f64,
    /// Judged on bandwidth (the curve has saturated), else on time.
    pub saturated: bool,
    /// From a model across world sizes, outside the worlds it was fitted on.
    pub extrapolated: bool,
}

impl ExpectModel {
    /// Whether `name` is a model rather than a busbw profile: a bundled network profile or a
    /// `.json` file.
    pub fn names_one(name: &str) -> bool {
        profile_names().contains(&name.trim().to_ascii_lowercase().as_str()) || is_json(name)
    }

    /// A bundled network profile by name, or a fit.json at that path.
    pub fn load(name: &str) -> Result<ExpectModel> {
        let path = Path::new(name);
        let (fit, label) = match is_json(name) {
            true => (FitFile::read(path)?, path.file_stem()),
            false => (profile(name)?, None),
        };
        let label = label.map_or(name.trim().to_ascii_lowercase(), |s| {
            s.to_string_lossy().into_owned()
        });
        Ok(ExpectModel { name: label, fit })
    }

    /// The expected time and busbw at a point, or why the model has none: the fit's curve of
    /// exactly this point where it has one (as a reference fit is read), else its model
    /// across world sizes.
    pub fn expected(&self, k: &GroupKey) -> std::result::Result<Expected, String> {
        let (time_us, peak_us, extrapolated) = match curve_time_us(&self.fit, k) {
            Some(t) => {
                let big = GroupKey {
                    bytes: ASYMPTOTE_BYTES,
                    ..k.clone()
                };
                (t, curve_time_us(&self.fit, &big).unwrap_or(f64::NAN), false)
            }
            None => self.model_times(k)?,
        };
        let busbw = |bytes: usize, t: f64| {
            bytes as f64 / t / 1e3 * k.op.algbw_factor(k.world) * k.op.busbw_factor(k.world)
        };
        let (busbw_gbps, peak_gbps) = (busbw(k.bytes, time_us), busbw(ASYMPTOTE_BYTES, peak_us));
        let usable = |x: f64| x.is_finite() && x > 0.0;
        if !usable(time_us) || !usable(busbw_gbps) || !usable(peak_gbps) {
            return Err(format!(
                "its model gives {time_us} us, {busbw_gbps} GB/s for {} and {peak_gbps} GB/s at \
                 1 TiB",
                k.label()
            ));
        }
        Ok(Expected {
            time_us,
            busbw_gbps,
            saturated: busbw_gbps >= SATURATED * peak_gbps,
            extrapolated,
        })
    }

    /// The cross-world model's time at the point and at [`ASYMPTOTE_BYTES`]. A point whose
    /// dtype the fit lacks is expected from another dtype's model of the same op and algorithm
    /// (busbw moves bytes; the element type matters little next to the link).
    fn model_times(&self, k: &GroupKey) -> std::result::Result<(f64, f64, bool), String> {
        let q = query_of(k);
        let at = |q: &Query| predict(&self.fit, q).map_err(|e| e.to_string());
        let p: Prediction = at(&q).or_else(|first| {
            at(&Query {
                dtype: None,
                ..q.clone()
            })
            .map_err(|_| first)
        })?;
        let peak = at(&Query {
            bytes: ASYMPTOTE_BYTES,
            dtype: Some(p.dtype),
            algo: p.algo,
            ..q
        })?;
        Ok((p.time_us, peak.time_us, p.extrapolated))
    }

    /// One criterion per measured point of 2 or more ranks (roots and communicator setups of
    /// one point judged together, against the first one's expectation: a criterion's selector
    /// does not tell setups apart), and notes: how many points were judged on which side, and
    /// each reason a point could not be.
    pub fn criteria(&self, keys: &[GroupKey], margin: f64) -> (Vec<Criterion>, Vec<String>) {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut missing = BTreeSet::new();
        let (mut on_busbw, mut on_time, mut outside) = (0, 0, 0);
        for k in keys.iter().filter(|k| k.world >= 2) {
            let point = (k.op, k.algo, k.proto, k.dtype, k.world, k.nodes, k.bytes);
            if !seen.insert((point, k.in_place)) {
                continue;
            }
            match self.expected(k) {
                Ok(e) => {
                    on_busbw += usize::from(e.saturated);
                    on_time += usize::from(!e.saturated);
                    outside += usize::from(e.extrapolated);
                    out.push(self.criterion(k, e, margin));
                }
                Err(why) => {
                    missing.insert(why);
                }
            }
        }
        let mut notes = vec![format!(
            "expect {}: {on_busbw} points judged on busbw (where the model's curve reaches {:.0}% \
             of its peak), {on_time} on time below that",
            self.name,
            SATURATED * 100.0
        )];
        if outside > 0 {
            notes.push(format!(
                "expect {}: {outside} points lie outside the world sizes its models were fitted \
                 on (extrapolated)",
                self.name
            ));
        }
        notes.extend(
            (missing.into_iter()).map(|why| format!("expect {}: {why}; not judged", self.name)),
        );
        (out, notes)
    }

    /// The criterion of one point: its busbw at least the expected less the margin, or its
    /// time at most the expected plus the margin.
    fn criterion(&self, k: &GroupKey, e: Expected, margin: f64) -> Criterion {
        let check = if e.saturated {
            Check::MinBusbw(e.busbw_gbps * (1.0 - margin))
        } else {
            Check::MaxTime(e.time_us * (1.0 + margin))
        };
        Criterion {
            name: format!("expect-{} {}", self.name, k.label()),
            select: Selector {
                ops: vec![k.op],
                algos: vec![k.algo],
                protos: k.proto.into_iter().collect(),
                dtypes: vec![k.dtype],
                worlds: vec![k.world],
                nodes: Some(k.nodes),
                in_place: Some(k.in_place),
                min_bytes: k.bytes,
                max_bytes: k.bytes,
            },
            stat: Stat::Median,
            checks: vec![check],
            reference: None,
        }
    }
}

#[cfg(test)]
#[path = "expect_model_tests.rs"]
mod tests;
