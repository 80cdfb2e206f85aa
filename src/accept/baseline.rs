//! `accept --baseline-from DIR`: a criteria file written from a run known to be good, so that an
//! operator keeps the thresholds of their own machines. The `[sweep]` table measures the same
//! points again (from the run's meta.json); per curve (op, algorithm, dtype, world, nodes,
//! placement) a bandwidth floor from the size where the curve saturates (busbw at 90% of its
//! largest) and a latency ceiling up to the last size within twice the curve's smallest time,
//! each the run's own value (median over the folders given) with `--margin`; and no wrong
//! element anywhere. Keys as in docs/ACCEPTANCE.md.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use super::measure::{GroupKey, Measured, PointGroup};
use crate::error::{Error, Result};
use crate::meta::Meta;
use crate::units::format_size;

/// Share of a curve's largest busbw from which it counts as saturated.
const SATURATED: f64 = 0.9;
/// A size is latency-bound while its time is within this factor of the curve's smallest.
const LATENCY_SPAN: f64 = 2.0;
/// Criteria a baseline may write: two per curve, within the criteria file's own bound.
const MAX_CURVES: usize = (super::criteria::MAX_CRITERIA - 1) / 2;

/// One curve's points, in size order: (bytes, median busbw, median time).
type Curve = Vec<(usize, f64, f64)>;

/// `--baseline-from`: the criteria file of the folders `dirs` on stdout; exit 0.
pub fn print(dirs: &[PathBuf], margin: f64) -> Result<u8> {
    super::expect::check_margin(margin, "--margin")?;
    let measured = super::measure::read_measured(dirs)?;
    let first = dirs
        .first()
        .ok_or_else(|| Error::usage("--baseline-from needs a folder"))?;
    let meta = Meta::read(&first.join(crate::meta::META_FILE))?;
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let text = criteria_text(&measured, &meta, margin, &names.join(", "))?;
    crate::output::stdout::print(&text);
    Ok(0)
}

/// The criteria text for the runs `measured` (read from `dirs`), whose first meta.json is
/// `meta`; `margin` loosens every threshold by that share.
pub fn criteria_text(measured: &Measured, meta: &Meta, margin: f64, dirs: &str) -> Result<String> {
    let curves = curves(&measured.groups);
    if curves.is_empty() {
        return Err(Error::usage(format!(
            "--baseline-from {dirs}: the run has no measured point to take thresholds from"
        )));
    }
    if curves.len() > MAX_CURVES {
        return Err(Error::usage(format!(
            "--baseline-from {dirs}: {} curves, more than the {MAX_CURVES} a criteria file \
             holds; take the baseline from a smaller sweep",
            curves.len()
        )));
    }
    let mut out = header(meta, margin, dirs);
    out.push_str(&sweep_table(meta));
    out.push_str("\n[[criterion]]\nname = \"correct\"\nmax_wrong = 0\nstat = \"worst\"\n");
    for (key, curve) in &curves {
        out.push_str(&curve_criteria(key, curve, margin));
    }
    Ok(out)
}

/// The curves of the groups: every point keyed by all but its size.
fn curves(groups: &[PointGroup]) -> BTreeMap<GroupKey, Curve> {
    let mut curves: BTreeMap<GroupKey, Curve> = BTreeMap::new();
    for g in groups {
        // The criteria's selectors have no root or communicator setup: those curves merge.
        let key = GroupKey {
            bytes: 0,
            root: None,
            comm: Default::default(),
            ..g.key.clone()
        };
        let busbw = median(g.obs.iter().map(|o| o.record.busbw_gbps));
        let time = median(g.obs.iter().map(|o| o.record.time_us_median));
        curves
            .entry(key)
            .or_default()
            .push((g.key.bytes, busbw, time));
    }
    for c in curves.values_mut() {
        c.sort_by_key(|p| p.0);
    }
    curves
}

/// The median of the finite values (NaN where none is).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    crate::stats::median_of(&mut v)
}

fn header(meta: &Meta, margin: f64, dirs: &str) -> String {
    let mut h = String::new();
    let _ = writeln!(
        h,
        "# Acceptance criteria from a run known to be good: {dirs}"
    );
    let _ = writeln!(
        h,
        "# (collbench accept --baseline-from, margin {margin}): backend {}{}, {} rank(s) on {}{}.",
        meta.backend,
        meta.library
            .as_deref()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default(),
        meta.ranks,
        if meta.hosts.is_empty() {
            "this host".to_string()
        } else {
            meta.hosts.join(", ")
        },
        if meta.gpus.is_empty() {
            String::new()
        } else {
            format!(", GPUs {}", meta.gpus.join(", "))
        },
    );
    let _ = writeln!(
        h,
        "# Each threshold is the run's own value (median of the folders) loosened by the margin;"
    );
    let _ = writeln!(
        h,
        "# small sizes are noisy: widen a latency ceiling rather than rerun until it passes."
    );
    let _ = writeln!(h, "name = \"baseline\"");
    h
}

/// `[sweep]` from meta.json's options: the same backend, ops, algorithms, types, reductions,
/// ranks, worlds, sizes, iterations and placements.
fn sweep_table(meta: &Meta) -> String {
    let o = &meta.options;
    let mut t = String::from("\n[sweep]\n");
    let _ = writeln!(t, "backend = \"{}\"", meta.backend);
    for (key, field) in [
        ("op", "ops"),
        ("algo", "algos"),
        ("dtype", "dtypes"),
        ("redop", "redops"),
    ] {
        if let Some(list) = string_list(&o[field]) {
            let _ = writeln!(t, "{key} = \"{}\"", list.join(","));
        }
    }
    let _ = writeln!(t, "ranks = {}", meta.ranks);
    if let Some(w) = number_list(&o["world_sizes"]) {
        let joined: Vec<String> = w.iter().map(|n| n.to_string()).collect();
        let _ = writeln!(t, "world_sizes = \"{}\"", joined.join(","));
    }
    if let Some(sizes) = number_list(&o["sizes"]) {
        t.push_str(&size_keys(&sizes));
    }
    for key in ["iters", "warmup"] {
        if let Some(n) = o[key].as_u64() {
            let _ = writeln!(t, "{key} = {n}");
        }
    }
    let placements: Vec<bool> = o["in_place"]
        .as_array()
        .map(|a| a.iter().filter_map(|b| b.as_bool()).collect())
        .unwrap_or_default();
    let in_place = match placements.as_slice() {
        [true] => "on",
        [false, true] | [true, false] => "both",
        _ => "off",
    };
    let _ = writeln!(t, "in_place = \"{in_place}\"");
    t
}

/// `min_bytes`, `max_bytes` and, where the sizes grow by one whole factor, `factor`.
fn size_keys(sizes: &[u64]) -> String {
    let (Some(&first), Some(&last)) = (sizes.first(), sizes.last()) else {
        return String::new();
    };
    let mut t = format!("min_bytes = {first}\nmax_bytes = {last}\n");
    let factor = match sizes {
        [a, b, ..] if *a > 0 && b % a == 0 => Some(b / a),
        _ => None,
    };
    if let Some(f) = factor.filter(|&f| f >= 2) {
        let geometric = sizes.windows(2).all(|w| w[0].checked_mul(f) == Some(w[1]));
        if geometric {
            let _ = writeln!(t, "factor = {f}");
        }
    }
    t
}

fn string_list(v: &serde_json::Value) -> Option<Vec<String>> {
    let list: Vec<String> = v
        .as_array()?
        .iter()
        .filter_map(|x| x.as_str().map(str::to_string))
        .collect();
    (!list.is_empty()).then_some(list)
}

fn number_list(v: &serde_json::Value) -> Option<Vec<u64>> {
    let list: Vec<u64> = v.as_array()?.iter().filter_map(|x| x.as_u64()).collect();
    (!list.is_empty()).then_some(list)
}

/// The bandwidth floor and latency ceiling of one curve.
fn curve_criteria(k: &GroupKey, curve: &Curve, margin: f64) -> String {
    let proto = k.proto.map(|p| format!("-{p}")).unwrap_or_default();
    let name = format!(
        "{}-{}{proto}-{}-w{}-n{}{}",
        k.op,
        k.algo,
        k.dtype,
        k.world,
        k.nodes,
        if k.in_place { "-inplace" } else { "" }
    );
    let mut select = format!(
        "op = \"{}\"\nalgo = \"{}\"\ndtype = \"{}\"\nworld = {}\nnodes = {}\nin_place = {}\n",
        k.op, k.algo, k.dtype, k.world, k.nodes, k.in_place
    );
    if let Some(p) = k.proto {
        let _ = writeln!(select, "proto = \"{p}\"");
    }
    let mut t = String::new();
    if let Some((from, floor)) = saturated(curve) {
        let _ = write!(
            t,
            "\n# {name}: busbw {floor:.3} GB/s at worst from {} on, where it saturates\n\
             [[criterion]]\nname = \"{name}-busbw\"\n{select}min_bytes = {from}\n\
             min_busbw_gbps = {:.6}\n",
            format_size(from),
            floor * (1.0 - margin)
        );
    }
    if let Some((to, ceiling)) = latency_bound(curve) {
        let _ = write!(
            t,
            "\n# {name}: {ceiling:.3} us at worst up to {}\n\
             [[criterion]]\nname = \"{name}-latency\"\n{select}max_bytes = {to}\n\
             max_time_us = {:.6}\n",
            format_size(to),
            ceiling * (1.0 + margin)
        );
    }
    t
}

/// From the first size whose busbw reaches 90% of the curve's largest: (that size, the
/// smallest busbw from there on). `None` where the curve has no bandwidth (busbw 0 at world 1).
fn saturated(curve: &Curve) -> Option<(usize, f64)> {
    let top = curve.iter().map(|p| p.1).fold(0.0, f64::max);
    if top <= 0.0 {
        return None;
    }
    let at = curve.iter().position(|p| p.1 >= SATURATED * top)?;
    let floor = curve[at..]
        .iter()
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min);
    Some((curve[at].0, floor))
}

/// Up to the last size of the leading run within twice the smallest time: (that size, the
/// largest time up to it).
fn latency_bound(curve: &Curve) -> Option<(usize, f64)> {
    let least = curve.iter().map(|p| p.2).fold(f64::INFINITY, f64::min);
    if !(least.is_finite() && least > 0.0) {
        return None;
    }
    let within = curve
        .iter()
        .take_while(|p| p.2 <= LATENCY_SPAN * least)
        .count();
    let last = curve.get(within.checked_sub(1)?)?;
    let ceiling = curve[..within].iter().map(|p| p.2).fold(0.0, f64::max);
    Some((last.0, ceiling))
}

#[cfg(test)]
#[path = "baseline_tests.rs"]
mod tests;
