//! The verdict section: a verdict.json of `collbench accept` (`collbench.verdict/v1`,
//! docs/FORMATS.md): the overall result as a badge, the counts and runs judged, one row per
//! threshold checked at each matched point (criterion, point, measured, threshold, margin,
//! result, reason code, slow rank or node), criteria that matched no point, and the notes. A JSON object of
//! another shape is shown loosely: its outcome field as the badge, its `criteria` as a table.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::page::{esc, fixed, key_values, num, table, text, Cell};
use super::sections::value_text;

/// The parts of verdict.json the page shows; missing fields read as empty.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct VerdictDoc {
    name: String,
    criteria_file: String,
    created: String,
    repeats: usize,
    result: String,
    exit_code: Option<u8>,
    counts: Option<Value>,
    runs: Vec<RunDoc>,
    criteria: Vec<CriterionDoc>,
    notes: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RunDoc {
    path: String,
    status: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CriterionDoc {
    name: String,
    selector: String,
    stat: String,
    result: String,
    note: Option<String>,
    points: Vec<PointDoc>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PointDoc {
    label: String,
    checks: Vec<CheckDoc>,
    slow_rank: Option<SlowDoc>,
    slow_node: Option<SlowDoc>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CheckDoc {
    check: String,
    unit: String,
    measured: Option<f64>,
    threshold: f64,
    margin_pct: Option<f64>,
    result: String,
    reason: Option<String>,
    note: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct SlowDoc {
    id: usize,
    global_rank: Option<usize>,
    host: Option<String>,
    excess_pct: f64,
}

/// The section body for a verdict file's JSON.
pub fn render(v: &Value, source: &str) -> String {
    let Some(obj) = v.as_object() else {
        return format!(
            "<p class=\"note\">{}: not a JSON object; nothing to show.</p>\n",
            esc(source)
        );
    };
    let is_v1 = obj.get("schema").and_then(Value::as_str) == Some("collbench.verdict/v1");
    match serde_json::from_value::<VerdictDoc>(v.clone()) {
        Ok(doc) if is_v1 => verdict_v1(&doc, source),
        _ => loose(obj, source),
    }
}

/// The badge of an outcome text.
fn badge(result: &str, source: &str) -> String {
    let (class, word) = match result.to_ascii_lowercase().as_str() {
        "pass" | "passed" | "ok" | "true" => ("pass", "PASS"),
        "fail" | "failed" | "false" => ("fail", "FAIL"),
        "no-data" => ("other", "NO DATA"),
        _ => ("other", "NO OUTCOME"),
    };
    format!(
        "<p><span class=\"badge {class}\">{word}</span> <span class=\"note\">from {}</span></p>\n",
        esc(source)
    )
}

/// `pass`/`fail` row classes for a result text.
fn row_class(result: &str) -> Option<&'static str> {
    match result {
        "pass" => Some("pass"),
        "fail" | "no-data" => Some("fail"),
        _ => None,
    }
}

fn verdict_v1(d: &VerdictDoc, source: &str) -> String {
    let mut out = badge(&d.result, source);
    let runs: Vec<String> = d
        .runs
        .iter()
        .map(|r| format!("{} ({})", r.path, r.status))
        .collect();
    let mut facts = vec![
        (
            "criteria".to_string(),
            format!("{} ({})", d.name, d.criteria_file),
        ),
        ("judged".into(), d.created.clone()),
        (
            "runs (repeats)".into(),
            format!("{}: {}", d.repeats, runs.join(", ")),
        ),
    ];
    if let Some(c) = &d.counts {
        facts.push(("counts".into(), counts(c)));
    }
    if let Some(code) = d.exit_code {
        facts.push(("exit code".into(), code.to_string()));
    }
    out.push_str(&key_values(&facts));
    out.push_str(&checks_table(d));
    if !d.notes.is_empty() {
        out.push_str("<ul>\n");
        for n in &d.notes {
            out.push_str(&format!("<li>{}</li>\n", esc(n)));
        }
        out.push_str("</ul>\n");
    }
    out
}

/// `2 criteria (1 failed, 0 without data), 160 checks (41 failed, 0 without data)`, or the
/// JSON as it is when it has other fields.
fn counts(c: &Value) -> String {
    let n = |k: &str| c.get(k).and_then(Value::as_u64);
    match (
        n("criteria"),
        n("criteria_failed"),
        n("criteria_no_data"),
        n("checks"),
        n("checks_failed"),
        n("checks_no_data"),
    ) {
        (Some(a), Some(b), Some(c), Some(d), Some(e), Some(f)) => format!(
            "{a} criteria ({b} failed, {c} without data), {d} checks ({e} failed, {f} without data)"
        ),
        _ => value_text(c),
    }
}

const CHECK_COLUMNS: [&str; 10] = [
    "criterion",
    "point",
    "check",
    "measured",
    "threshold",
    "margin",
    "result",
    "reason",
    "slowest",
    "note",
];

/// One row per (criterion, point, check); a criterion without points gets one row.
fn checks_table(d: &VerdictDoc) -> String {
    let mut rows: Vec<(Vec<Cell>, Option<&str>)> = Vec::new();
    for c in &d.criteria {
        let what = format!("{} ({}; {})", c.name, c.selector, c.stat);
        if c.points.is_empty() {
            let mut cells = vec![text(what.clone()), text("no point matched")];
            cells.extend(["", "", "", ""].map(text));
            let reason = if c.result == "no-data" { "no-data" } else { "" };
            cells.extend([text(c.result.clone()), text(reason), text("")]);
            cells.push(text(opt(&c.note)));
            rows.push((cells, row_class(&c.result)));
        }
        for p in &c.points {
            for k in &p.checks {
                let cells = vec![
                    text(what.clone()),
                    text(p.label.clone()),
                    text(k.check.clone()),
                    num(k
                        .measured
                        .map_or("-".into(), |m| format!("{} {}", short(m), k.unit))),
                    num(format!("{} {}", short(k.threshold), k.unit)),
                    num(k.margin_pct.map_or("-".into(), |m| format!("{m:+.1}%"))),
                    text(k.result.clone()),
                    text(opt(&k.reason)),
                    text(slowest(p)),
                    text(opt(&k.note)),
                ];
                rows.push((cells, row_class(&k.result)));
            }
        }
    }
    let failing: Vec<(Vec<Cell>, Option<&str>)> = rows
        .iter()
        .filter(|(_, class)| *class == Some("fail"))
        .cloned()
        .collect();
    let mut out = if failing.is_empty() {
        "<p>Every check passed.</p>\n".to_string()
    } else {
        format!(
            "<h3>Checks that failed or could not be judged ({} of {})</h3>\n{}",
            failing.len(),
            rows.len(),
            table(&CHECK_COLUMNS, &failing)
        )
    };
    out.push_str(&format!(
        "<details>\n<summary>All {} checks</summary>\n{}</details>\n",
        rows.len(),
        table(&CHECK_COLUMNS, &rows)
    ));
    out
}

fn opt(s: &Option<String>) -> String {
    s.clone().unwrap_or_default()
}

/// A number with up to four significant decimals.
fn short(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        fixed(v, if v == v.trunc() { 0 } else { 1 })
    } else {
        format!("{}", (v * 1e4).round() / 1e4)
    }
}

/// The slow rank (or node) of a point, e.g. `rank 3 (node1) +12.5%`.
fn slowest(p: &PointDoc) -> String {
    let describe = |what: &str, s: &SlowDoc| {
        let global = s
            .global_rank
            .map_or(String::new(), |g| format!(", rank {g} of the launch"));
        let host = s
            .host
            .as_ref()
            .map_or(String::new(), |h| format!(" on {h}"));
        format!("{what} {}{global}{host}: +{:.1}%", s.id, s.excess_pct)
    };
    match (&p.slow_node, &p.slow_rank) {
        (Some(n), _) => describe("node", n),
        (None, Some(r)) => describe("rank", r),
        (None, None) => String::new(),
    }
}

/// Any other JSON object: an outcome badge, `criteria` as a table, other fields listed.
fn loose(obj: &Map<String, Value>, source: &str) -> String {
    let outcome = ["result", "verdict", "outcome", "status", "pass", "passed"]
        .iter()
        .find_map(|k| obj.get(*k).map(value_text))
        .unwrap_or_default();
    let mut out = badge(&outcome, source);
    if let Some(criteria) = obj.get("criteria").and_then(Value::as_array) {
        out.push_str(&loose_table(criteria));
    }
    let rest: Vec<(String, String)> = obj
        .iter()
        .filter(|(k, _)| k.as_str() != "criteria")
        .map(|(k, v)| (k.clone(), value_text(v)))
        .collect();
    out.push_str(&key_values(&rest));
    out
}

/// One row per criterion; columns are the union of the criteria's fields.
fn loose_table(criteria: &[Value]) -> String {
    let mut columns: Vec<String> = Vec::new();
    for c in criteria.iter().filter_map(Value::as_object) {
        for k in c.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    let rows: Vec<(Vec<Cell>, Option<&str>)> = criteria
        .iter()
        .map(|c| {
            let field = |k: &str| c.get(k).unwrap_or(&Value::Null);
            let cells = columns
                .iter()
                .map(|k| Cell {
                    text: value_text(field(k)),
                    numeric: field(k).is_number(),
                })
                .collect();
            let result = ["result", "pass", "passed", "status"]
                .iter()
                .map(|k| value_text(field(k)))
                .find(|v| v != "-")
                .unwrap_or_default();
            let class = match result.as_str() {
                "true" => Some("pass"),
                "false" => Some("fail"),
                r => row_class(r),
            };
            (cells, class)
        })
        .collect();
    let head: Vec<&str> = columns.iter().map(String::as_str).collect();
    table(&head, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_verdict_shows_every_check() {
        let v: Value = serde_json::from_str(
            r#"{"schema": "collbench.verdict/v1", "name": "host-2ranks", "criteria_file": "c.toml",
                "created": "2026-11-23T12:00:00Z", "repeats": 1, "result": "fail", "exit_code": 1,
                "runs": [{"path": "results/a", "status": "complete"}],
                "counts": {"criteria": 2, "criteria_failed": 1},
                "criteria": [
                  {"name": "bandwidth", "selector": "op allreduce", "stat": "median", "result": "fail",
                   "note": null, "points": [{"label": "allreduce ring f32 w2 1 MiB", "result": "fail",
                     "slow_rank": {"id": 1, "global_rank": 1, "host": "n0", "excess_pct": 12.5},
                     "slow_node": null,
                     "checks": [{"check": "min_busbw_gbps", "unit": "GB/s", "values": [0.5],
                       "measured": 0.5, "threshold": 1.0, "margin_pct": -50.0, "result": "fail",
                       "note": null}]}]},
                  {"name": "tiny <x>", "selector": "sizes <= 1", "stat": "median", "result": "no-data",
                   "note": "no point matched", "points": []}],
                "notes": ["a note"]}"#,
        )
        .unwrap();
        let html = render(&v, "verdict.json");
        assert!(html.contains("badge fail\">FAIL"), "{html}");
        assert!(html.contains("<th>margin</th>"));
        assert!(html.contains("<tr class=\"fail\"><td>bandwidth (op allreduce; median)</td><td>allreduce ring f32 w2 1 MiB</td><td>min_busbw_gbps</td><td class=\"n\">0.5 GB/s</td><td class=\"n\">1 GB/s</td><td class=\"n\">-50.0%</td>"), "{html}");
        assert!(html.contains("rank 1, rank 1 of the launch on n0: +12.5%"));
        assert!(html.contains("tiny &lt;x&gt;"));
        assert!(html.contains("<li>a note</li>"));
    }

    #[test]
    fn other_shapes_are_shown_loosely() {
        let v: Value = serde_json::from_str(
            r#"{"verdict": "pass", "criteria": [{"name": "cv", "pass": false}, {"name": "bw", "pass": true}]}"#,
        )
        .unwrap();
        let html = render(&v, "x.json");
        assert!(html.contains("badge pass"));
        assert!(html.contains("<tr class=\"fail\"><td>cv</td>"), "{html}");
        assert!(html.contains("<tr class=\"pass\"><td>bw</td>"));
        assert!(render(&Value::Null, "x").contains("not a JSON object"));
    }
}
