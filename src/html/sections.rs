//! The report's data sections: a summary of the run, every measured point, the environment
//! from meta.json, and the fit's quality.

use std::collections::BTreeMap;

use super::page::{esc, fixed, key_values, num, pct, table, text, Cell};
use crate::collective::Op;
use crate::fit::schema::{algo_label, CurveFit, FitFile, Line, WorldModel};
use crate::model::record::PointRecord;
use crate::report::run_reader::Run;
use crate::units::format_size;

/// Key facts: what was measured and the best bus bandwidth of each op.
pub fn summary(run: &Run) -> String {
    let recs: Vec<&PointRecord> = run.points.iter().map(|p| &p.record).collect();
    let list = |f: &dyn Fn(&PointRecord) -> String| {
        let mut v: Vec<String> = Vec::new();
        for r in &recs {
            let s = f(r);
            if !v.contains(&s) {
                v.push(s);
            }
        }
        v.join(", ")
    };
    let wrong = recs.iter().filter(|r| r.wrong > 0).count();
    let (lo, hi) = (
        recs.iter().map(|r| r.key.bytes).min().unwrap_or(0),
        recs.iter().map(|r| r.key.bytes).max().unwrap_or(0),
    );
    let mut pairs = vec![
        ("points".to_string(), recs.len().to_string()),
        ("ops".into(), list(&|r| r.key.op.to_string())),
        ("algorithms".into(), list(&|r| r.key.algo.to_string())),
        ("dtypes".into(), list(&|r| r.key.dtype.to_string())),
        ("world sizes".into(), list(&|r| r.key.world.to_string())),
        (
            "sizes".into(),
            format!("{} to {}", format_size(lo), format_size(hi)),
        ),
        (
            "points with wrong results".into(),
            if wrong == 0 {
                "none".into()
            } else {
                format!("{wrong} (marked in the tables)")
            },
        ),
    ];
    if recs.iter().any(|r| r.key.proto.is_some()) {
        let proto = |r: &PointRecord| r.key.proto.map_or("none".into(), |p| p.name().into());
        pairs.insert(3, ("protocols".into(), list(&proto)));
    }
    if recs.iter().any(|r| !r.key.comm.is_default()) {
        let setup = |r: &PointRecord| match r.key.comm.label().trim() {
            "" => "NCCL defaults".to_string(),
            l => l.to_string(),
        };
        pairs.insert(3, ("communicator setups".into(), list(&setup)));
    }
    pairs.extend(peaks(&recs));
    key_values(&pairs)
}

/// The highest busbw of each op, with where it was reached.
fn peaks(recs: &[&PointRecord]) -> Vec<(String, String)> {
    let mut best: BTreeMap<Op, &PointRecord> = BTreeMap::new();
    for r in recs
        .iter()
        .filter(|r| r.wrong == 0 && r.busbw_gbps.is_finite())
    {
        let e = best.entry(r.key.op).or_insert(r);
        if r.busbw_gbps > e.busbw_gbps {
            *e = r;
        }
    }
    best.into_iter()
        .map(|(op, r)| {
            (
                format!("peak busbw, {op}"),
                format!(
                    "{:.3} GB/s ({}{} world {}, {})",
                    r.busbw_gbps,
                    algo_label(r.key.algo, r.key.proto),
                    r.key.comm.label(),
                    r.key.world,
                    format_size(r.key.bytes)
                ),
            )
        })
        .collect()
}

const POINT_COLUMNS: [&str; 18] = [
    "algo",
    "dtype",
    "world",
    "nodes",
    "size",
    "in place",
    "iters",
    "median (µs)",
    "mean (µs)",
    "min (µs)",
    "p95 (µs)",
    "max (µs)",
    "CV",
    "busbw (GB/s)",
    "busbw mean (GB/s)",
    "wrong",
    "slowest rank",
    "skew (µs)",
];

fn point_row(r: &PointRecord) -> Vec<Cell> {
    let k = &r.key;
    let us = |v: f64| num(fixed(v, 2));
    vec![
        text(algo_label(k.algo, k.proto) + &k.comm.label()),
        text(k.dtype.to_string()),
        num(k.world.to_string()),
        num(k.nodes.to_string()),
        num(format_size(k.bytes)),
        text(if k.in_place { "yes" } else { "no" }),
        num(r.iters.to_string()),
        us(r.time_us_median),
        us(r.time_us_mean),
        us(r.time_us_min),
        us(r.time_us_p95),
        us(r.time_us_max),
        num(fixed(r.time_cv, 3)),
        num(fixed(r.busbw_gbps, 3)),
        num(fixed(r.busbw_gbps_mean, 3)),
        num(r.wrong.to_string()),
        num(r.slowest_rank.to_string()),
        us(r.skew_us_median),
    ]
}

/// One table per op of every measured point, rows with wrong results marked.
pub fn points(run: &Run) -> String {
    let mut by_op: BTreeMap<Op, Vec<&PointRecord>> = BTreeMap::new();
    for p in &run.points {
        by_op.entry(p.record.key.op).or_default().push(&p.record);
    }
    let mut out = String::from(
        "<p class=\"note\">Times are over the timed iterations, each the slowest rank's; busbw \
         from the median (busbw mean from the mean, as nccl-tests prints). Columns are those \
         of summary.csv (docs/FORMATS.md).</p>\n",
    );
    for (op, recs) in by_op {
        let rows: Vec<(Vec<Cell>, Option<&str>)> = recs
            .iter()
            .map(|r| (point_row(r), (r.wrong > 0).then_some("fail")))
            .collect();
        out.push_str(&format!(
            "<h3 id=\"points-{op}\">{op}</h3>\n<details open>\n<summary>{} points</summary>\n{}</details>\n",
            recs.len(),
            table(&POINT_COLUMNS, &rows)
        ));
    }
    out
}

/// meta.json: the run's status, host and options, as written (new fields appear too).
pub fn environment(run: &Run) -> String {
    let meta = serde_json::to_value(&run.meta).unwrap_or_default();
    let obj = meta.as_object().cloned().unwrap_or_default();
    let first = [
        "status",
        "error",
        "started",
        "ended",
        "backend",
        "transport",
        "ranks",
        "nodes",
        "hosts",
        "points",
        "collbench_version",
        "schema",
    ];
    let skip = ["command_line", "options", "files", "host"];
    let mut pairs: Vec<(String, String)> = Vec::new();
    if let Some(cmd) = obj.get("command_line").and_then(|c| c.as_array()) {
        let words: Vec<String> = cmd.iter().map(value_text).collect();
        pairs.push(("command line".into(), words.join(" ")));
    }
    for k in first {
        if let Some(v) = obj.get(k) {
            pairs.push((k.to_string(), value_text(v)));
        }
    }
    if let Some(host) = obj.get("host").and_then(|h| h.as_object()) {
        for (k, v) in host {
            pairs.push((format!("host.{k}"), value_text(v)));
        }
    }
    for (k, v) in &obj {
        if !first.contains(&k.as_str()) && !skip.contains(&k.as_str()) {
            pairs.push((k.clone(), value_text(v)));
        }
    }
    let options = obj
        .get("options")
        .and_then(|o| serde_json::to_string_pretty(o).ok())
        .unwrap_or_default();
    let files: Vec<String> = obj
        .get("files")
        .and_then(|f| f.as_object())
        .map(|f| {
            f.iter()
                .map(|(k, v)| format!("{k}: {}", value_text(v)))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "{}<h3>Sweep options</h3>\n<pre>{}</pre>\n<h3>Files</h3>\n<p>{}</p>\n",
        key_values(&pairs),
        esc(&options),
        esc(&files.join("; "))
    )
}

/// A JSON value as one line of text (strings without quotes, null as `-`).
pub fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    }
}

const CURVE_COLUMNS: [&str; 14] = [
    "op",
    "algo",
    "dtype",
    "world",
    "nodes",
    "in place",
    "sizes",
    "alpha (µs)",
    "bandwidth (GB/s)",
    "R²",
    "mean err",
    "max err",
    "LOSO max err",
    "regimes (max err)",
];

fn curve_row(c: &CurveFit) -> Vec<Cell> {
    let k = &c.key;
    let l = &c.line;
    let worst = c
        .segments
        .iter()
        .map(|s| s.quality.rel_err_max)
        .fold(0.0, f64::max);
    vec![
        text(k.op.to_string()),
        text(k.algo_label()),
        text(k.dtype.to_string()),
        num(k.world.to_string()),
        num(k.nodes.to_string()),
        text(if k.in_place { "yes" } else { "no" }),
        num(c.sizes.to_string()),
        num(alpha(l)),
        num(l.bandwidth_gbps.map_or("inf".into(), |b| fixed(b, 3))),
        num(fixed(l.quality.r2, 4)),
        num(pct(l.quality.rel_err_mean)),
        num(pct(l.quality.rel_err_max)),
        num(c.loso.map_or("-".into(), |h| pct(h.rel_err_max))),
        num(format!("{} ({})", c.segments.len(), pct(worst))),
    ]
}

fn alpha(l: &Line) -> String {
    format!(
        "{} [{}, {}]",
        fixed(l.alpha_us.value, 2),
        fixed(l.alpha_us.ci[0], 2),
        fixed(l.alpha_us.ci[1], 2)
    )
}

const MODEL_COLUMNS: [&str; 10] = [
    "op",
    "algo",
    "dtype",
    "form",
    "parameters (95% CI)",
    "worlds",
    "R²",
    "max err",
    "worst holdout",
    "largest world predicted",
];

fn model_row(m: &WorldModel) -> Vec<Cell> {
    let params: Vec<String> = m
        .params
        .iter()
        .map(|p| {
            format!(
                "{} = {} [{}, {}]",
                p.name,
                fixed(p.param.value, 4),
                fixed(p.param.ci[0], 4),
                fixed(p.param.ci[1], 4)
            )
        })
        .collect();
    let worlds: Vec<String> = m.worlds.iter().map(|w| w.to_string()).collect();
    let holdout = m
        .holdout
        .iter()
        .map(|h| h.rel_err_max)
        .fold(f64::NAN, f64::max);
    let chosen = if m.selected { " (selected)" } else { "" };
    let extrap = m
        .extrapolation
        .as_ref()
        .map_or(f64::NAN, |e| e.rel_err_mean);
    vec![
        text(m.op.to_string()),
        text(m.algo_label()),
        text(m.dtype.to_string()),
        text(format!("{}{chosen}: {}", m.form, m.formula)),
        text(params.join("; ")),
        num(worlds.join(", ")),
        num(fixed(m.quality.r2, 4)),
        num(pct(m.quality.rel_err_max)),
        num(pct(holdout)),
        num(pct(extrap)),
    ]
}

/// The fit's curves, cross-world models and notes; `origin` says where the fit came from.
pub fn fit_quality(fit: &FitFile, origin: &str) -> String {
    let mut out = format!(
        "<p class=\"note\">{}. Errors are relative to the per-size medians; LOSO is the error \
         predicting each size from a fit without it; holdout, each world from a model without \
         it; largest world predicted, that world from the smaller ones, by which `fit` selects \
         one candidate form per key (docs/METHODOLOGY.md).</p>\n<h3>Per curve: T(S) = alpha + beta·S</h3>\n",
        esc(origin)
    );
    let rows: Vec<(Vec<Cell>, Option<&str>)> =
        fit.curves.iter().map(|c| (curve_row(c), None)).collect();
    out.push_str(&table(&CURVE_COLUMNS, &rows));
    if !fit.models.is_empty() {
        out.push_str("<h3>Across world sizes</h3>\n");
        let rows: Vec<(Vec<Cell>, Option<&str>)> =
            fit.models.iter().map(|m| (model_row(m), None)).collect();
        out.push_str(&table(&MODEL_COLUMNS, &rows));
    }
    if !fit.notes.is_empty() {
        out.push_str("<h3>Notes</h3>\n<ul>\n");
        for n in &fit.notes {
            out.push_str(&format!("<li>{}</li>\n", esc(n)));
        }
        out.push_str("</ul>\n");
    }
    out
}
