//! Figures of a projection (projection.json, `collbench.projection/v1`): throughput, throughput
//! per GPU, MFU, tokens per joule and scaling efficiency against GPUs, one line per parallel
//! layout (tp, pp, and ep where expert-parallel).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::figure::{Axis, Figure, Legend, Scale, Series, Style, TickFormat};
use crate::error::{Error, Result};
use crate::project::output::PROJECTION_SCHEMA;

/// The parts of projection.json the figures use.
#[derive(Clone, Debug, Deserialize)]
pub struct ProjectionDoc {
    pub request: RequestDoc,
    pub network: NetworkDoc,
    pub rows: Vec<RowDoc>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RequestDoc {
    pub model: Named,
    pub hardware: Named,
}

#[derive(Clone, Debug, Deserialize)]
pub struct Named {
    pub name: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct NetworkDoc {
    pub source: String,
}

#[derive(Clone, Debug, Deserialize)]
pub struct RowDoc {
    pub world: usize,
    pub tp: usize,
    pub pp: usize,
    /// Expert-parallel degree; absent in files written before `--ep` (read as 1).
    #[serde(default = "one")]
    pub ep: usize,
    pub metrics: Option<MetricsDoc>,
    /// SE(N) against the layout's smallest projected world; absent in files written before it.
    #[serde(default)]
    pub scaling_eff: Option<f64>,
}

fn one() -> usize {
    1
}

#[derive(Clone, Copy, Debug, Deserialize)]
pub struct MetricsDoc {
    pub tokens_per_s: f64,
    pub tokens_per_s_per_gpu: f64,
    pub mfu: f64,
    pub tokens_per_joule: f64,
}

/// Reads projection.json (or the folder `collbench project --out` wrote it into).
pub fn read(path: &Path) -> Result<ProjectionDoc> {
    let file: PathBuf = if path.is_dir() {
        path.join("projection.json")
    } else {
        path.to_path_buf()
    };
    let bad = |msg: String| Error::Input {
        path: file.clone(),
        msg,
    };
    let what = "projection JSON";
    let text = crate::input::read_text_capped(&file, crate::input::MAX_DOCUMENT_BYTES, what)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(PROJECTION_SCHEMA) => {}
        Some(other) => {
            return Err(bad(format!(
                "schema '{other}', expected '{PROJECTION_SCHEMA}' (write it with collbench project --out DIR)"
            )))
        }
        None => {
            return Err(bad(format!(
                "no \"schema\" field; not a {PROJECTION_SCHEMA} file (write it with collbench project --out DIR)"
            )))
        }
    }
    serde_json::from_value(value).map_err(|e| bad(format!("invalid {PROJECTION_SCHEMA}: {e}")))
}

/// A figure of one metric: file name, title, y axis, whether y starts at 0 (then the legend
/// goes lower right, else upper left; lower left when given), the value.
type Metric = (
    &'static str,
    &'static str,
    Axis,
    bool,
    Option<Legend>,
    fn(&RowDoc) -> Option<f64>,
);

/// One figure per metric; layouts that never fit in memory draw nothing.
pub fn figures(doc: &ProjectionDoc) -> Vec<Figure> {
    let what = format!(
        "{} on {}",
        doc.request.model.name, doc.request.hardware.name
    );
    let note = format!(
        "projected by collbench project from {}; one line per layout (tp × pp, rest FSDP)",
        doc.network.source
    );
    let metrics: [Metric; 5] = [
        (
            "throughput",
            "throughput",
            Axis::new(
                "tokens per second (all GPUs)",
                Scale::Log10,
                TickFormat::Number,
            ),
            false,
            None,
            |r| r.metrics.map(|m| m.tokens_per_s),
        ),
        (
            "throughput-per-gpu",
            "throughput per GPU",
            Axis::new(
                "tokens per second per GPU",
                Scale::Linear,
                TickFormat::Number,
            ),
            true,
            None,
            |r| r.metrics.map(|m| m.tokens_per_s_per_gpu),
        ),
        (
            "mfu",
            "model FLOPs utilisation",
            Axis::new("MFU (% of peak FLOP/s)", Scale::Linear, TickFormat::Percent),
            true,
            None,
            |r| r.metrics.map(|m| m.mfu),
        ),
        (
            "tokens-per-joule",
            "energy efficiency",
            Axis::new(
                "tokens per joule (per GPU)",
                Scale::Linear,
                TickFormat::Number,
            ),
            true,
            None,
            |r| r.metrics.map(|m| m.tokens_per_joule),
        ),
        (
            "scaling-efficiency",
            "scaling efficiency",
            Axis::new(
                "SE(N) (% of the layout at its smallest world)",
                Scale::Linear,
                TickFormat::Percent,
            ),
            true,
            Some(Legend::LowerLeft),
            |r| r.scaling_eff,
        ),
    ];
    metrics
        .into_iter()
        .map(|(name, title, y, from_zero, legend, get)| Figure {
            name: format!("projection-{name}"),
            title: format!("{what}: {title} by GPUs"),
            x: Axis::new("GPUs (world size)", Scale::Log2, TickFormat::Count),
            y,
            series: layout_series(doc, get),
            legend: legend.unwrap_or(if from_zero {
                Legend::LowerRight
            } else {
                Legend::UpperLeft
            }),
            note: Some(note.clone()),
            y_from_zero: from_zero,
        })
        .collect()
}

fn layout_series(doc: &ProjectionDoc, get: fn(&RowDoc) -> Option<f64>) -> Vec<Series> {
    let mut layouts: BTreeMap<(usize, usize, usize), Vec<(f64, f64)>> = BTreeMap::new();
    for r in &doc.rows {
        let line = layouts.entry((r.tp, r.pp, r.ep)).or_default();
        if let Some(y) = get(r) {
            line.push((r.world as f64, y));
        }
    }
    layouts
        .into_iter()
        .filter(|(_, points)| !points.is_empty())
        .enumerate()
        .map(|(i, ((tp, pp, ep), mut points))| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let ep = if ep > 1 {
                format!(", ep {ep}")
            } else {
                String::new()
            };
            Series {
                label: format!("tp {tp}, pp {pp}{ep}"),
                color: i,
                style: Style::Measured,
                points,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_written_before_scaling_efficiency_still_read() {
        let old = serde_json::json!({"world": 8, "tp": 1, "pp": 1, "metrics": null});
        let row: RowDoc = serde_json::from_value(old).unwrap();
        assert_eq!(row.scaling_eff, None);
        let new = serde_json::json!({"world": 8, "tp": 1, "pp": 1, "metrics": null,
                                     "scaling_eff": 0.75});
        let row: RowDoc = serde_json::from_value(new).unwrap();
        assert_eq!(row.scaling_eff, Some(0.75));
        assert_eq!(row.ep, 1);
    }

    #[test]
    fn expert_parallel_layouts_are_lines_of_their_own() {
        let row = |ep: usize, tps: f64| {
            serde_json::json!({"world": 8, "tp": 1, "pp": 1, "ep": ep, "metrics": {
                "tokens_per_s": tps, "tokens_per_s_per_gpu": 1.0, "mfu": 0.5,
                "tokens_per_joule": 1.0}})
        };
        let doc: ProjectionDoc = serde_json::from_value(serde_json::json!({
            "request": {"model": {"name": "m"}, "hardware": {"name": "h"}},
            "network": {"source": "profile p"},
            "rows": [row(1, 10.0), row(8, 20.0)],
        }))
        .unwrap();
        let series = layout_series(&doc, |r| r.metrics.map(|m| m.tokens_per_s));
        let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["tp 1, pp 1", "tp 1, pp 1, ep 8"]);
        assert_eq!(series[1].points, [(8.0, 20.0)]);
    }
}
