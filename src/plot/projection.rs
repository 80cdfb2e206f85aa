//! Figures of a projection (projection.json, `collbench.projection/v1`): throughput, throughput
//! per GPU, MFU and tokens per joule against GPUs, one line per parallel layout (tp, pp).

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
    pub metrics: Option<MetricsDoc>,
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
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io(&file, e))?;
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

/// A figure of one metric: file name, title, y axis, whether y starts at 0, the value.
type Metric = (
    &'static str,
    &'static str,
    Axis,
    bool,
    fn(&MetricsDoc) -> f64,
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
    let metrics: [Metric; 4] = [
        (
            "throughput",
            "throughput",
            Axis::new(
                "tokens per second (all GPUs)",
                Scale::Log10,
                TickFormat::Number,
            ),
            false,
            |m| m.tokens_per_s,
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
            |m| m.tokens_per_s_per_gpu,
        ),
        (
            "mfu",
            "model FLOPs utilisation",
            Axis::new("MFU (% of peak FLOP/s)", Scale::Linear, TickFormat::Percent),
            true,
            |m| m.mfu,
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
            |m| m.tokens_per_joule,
        ),
    ];
    metrics
        .into_iter()
        .map(|(name, title, y, from_zero, get)| Figure {
            name: format!("projection-{name}"),
            title: format!("{what}: {title} by GPUs"),
            x: Axis::new("GPUs (world size)", Scale::Log2, TickFormat::Count),
            y,
            series: layout_series(doc, get),
            legend: if from_zero {
                Legend::LowerRight
            } else {
                Legend::UpperLeft
            },
            note: Some(note.clone()),
            y_from_zero: from_zero,
        })
        .collect()
}

fn layout_series(doc: &ProjectionDoc, get: fn(&MetricsDoc) -> f64) -> Vec<Series> {
    let mut layouts: BTreeMap<(usize, usize), Vec<(f64, f64)>> = BTreeMap::new();
    for r in &doc.rows {
        let line = layouts.entry((r.tp, r.pp)).or_default();
        if let Some(m) = &r.metrics {
            line.push((r.world as f64, get(m)));
        }
    }
    layouts
        .into_iter()
        .filter(|(_, points)| !points.is_empty())
        .enumerate()
        .map(|(i, ((tp, pp), mut points))| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: format!("tp {tp}, pp {pp}"),
                color: i,
                style: Style::Measured,
                points,
            }
        })
        .collect()
}
