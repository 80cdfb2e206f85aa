//! What a projection shows: the table on stdout, projection.csv and projection.json
//! (`collbench.projection/v1`, docs/FORMATS.md). Pure: text out, the caller writes it.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::overlap::OverlapSource;
use super::plan::{Batch, Projection, Request, Row};
use super::roofline::ComputeModel;
use crate::error::Result;
use crate::fit::schema::FitFile;

/// Schema id of projection.json.
pub const PROJECTION_SCHEMA: &str = "collbench.projection/v1";

/// Columns of projection.csv, in order.
pub const CSV_COLUMNS: [&str; 38] = [
    "model",
    "hardware",
    "world",
    "nodes",
    "tp",
    "pp",
    "dp",
    "global_batch",
    "microbatches",
    "microbatch_size",
    "fits_memory",
    "memory_gb",
    "step_time_s",
    "compute_s",
    "overlap_slowdown_s",
    "exposed_comm_s",
    "overlapped_comm_s",
    "bubble_s",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "mfu",
    "exposed_comm_frac",
    "busy_frac",
    "power_w_per_gpu",
    "tokens_per_joule",
    "memory_bound_frac",
    "marginal_tokens_per_s_per_gpu",
    "marginal_best_tokens_per_s_per_gpu",
    "best",
    "speedup",
    "parallel_eff",
    "scaling_eff",
    "comm_compute_ratio",
    "bound",
    "ep",
    "alltoall_s",
    "pp_p2p_model",
    "alltoall_model",
];

/// projection.csv: one row per (world, layout); projected fields are empty where the layout
/// does not fit in memory.
pub fn csv(req: &Request, p: &Projection) -> String {
    let mut out = CSV_COLUMNS.join(",");
    out.push('\n');
    for r in &p.rows {
        out.push_str(&csv_row(req, r).join(","));
        out.push('\n');
    }
    out
}

fn csv_row(req: &Request, r: &Row) -> Vec<String> {
    let clean = |s: &str| s.replace([',', '\n', '\r'], " ");
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| x.to_string());
    let m = r.metrics;
    let f = |g: fn(&super::metrics::Metrics) -> f64| opt(m.as_ref().map(g));
    vec![
        clean(&req.model.name),
        clean(&req.hardware.name),
        r.world.to_string(),
        r.nodes.to_string(),
        r.tp.to_string(),
        r.pp.to_string(),
        r.dp.to_string(),
        r.global_batch.to_string(),
        r.microbatches.to_string(),
        r.microbatch_size.to_string(),
        r.fits_memory.to_string(),
        r.memory_gb.to_string(),
        f(|m| m.step_time_s),
        f(|m| m.compute_s),
        f(|m| m.overlap_slowdown_s),
        f(|m| m.exposed_comm_s),
        f(|m| m.overlapped_comm_s),
        f(|m| m.bubble_s),
        f(|m| m.tokens_per_s),
        f(|m| m.tokens_per_s_per_gpu),
        f(|m| m.mfu),
        f(|m| m.exposed_comm_frac),
        f(|m| m.busy_frac),
        f(|m| m.power_w_per_gpu),
        f(|m| m.tokens_per_joule),
        f(|m| m.memory_bound_frac),
        opt(r.marginal_tokens_per_s_per_gpu),
        opt(r.marginal_best_tokens_per_s_per_gpu),
        r.best.to_string(),
        opt(r.speedup),
        opt(r.parallel_eff),
        opt(r.scaling_eff),
        opt(r.comm_compute_ratio),
        r.bound.name().to_string(),
        r.ep.to_string(),
        f(|m| m.alltoall_s),
        r.pp_p2p_model.unwrap_or_default().to_string(),
        r.alltoall_model.unwrap_or_default().to_string(),
    ]
}

/// Title, unit and width of a table column.
type Column = (&'static str, &'static str, usize);

/// Title, unit and width of each table column (a MoE model adds [`EP`] and [`A2A`]).
const TABLE: [Column; 21] = [
    ("world", "", 6),
    ("nodes", "", 5),
    ("tp", "", 3),
    ("pp", "", 3),
    ("dp", "", 5),
    ("step", "(s)", 8),
    ("compute", "(s)", 8),
    ("exposed", "(s)", 8),
    ("overlap", "(s)", 8),
    ("bubble", "(s)", 7),
    ("tokens/s", "", 10),
    ("tok/s/GPU", "", 9),
    ("MFU", "(%)", 5),
    ("exp.comm", "(%)", 8),
    ("W/GPU", "", 6),
    ("tok/J", "", 6),
    ("marginal", "(tok/s/GPU)", 11),
    ("S", "(x)", 6),
    ("E", "(%)", 5),
    ("SE", "(%)", 5),
    ("bound", "", 5),
];

/// The expert-parallel degree, after `pp` (MoE models only).
const EP: Column = ("ep", "", 3);
/// Seconds of MoE AllToAll per step (of `exposed`), after `bubble` (MoE models only).
const A2A: Column = ("a2a", "(s)", 7);

/// The table's columns: [`TABLE`], with [`EP`] and [`A2A`] for a MoE model.
fn columns(req: &Request) -> Vec<Column> {
    let mut out = Vec::with_capacity(TABLE.len() + 2);
    for c in TABLE {
        out.push(c);
        if req.model.is_moe() {
            match c.0 {
                "pp" => out.push(EP),
                "bubble" => out.push(A2A),
                _ => {}
            }
        }
    }
    out
}

fn line(lead: char, cells: &[String], cols: &[Column]) -> String {
    let mut out = String::from(lead);
    for (cell, (_, _, width)) in cells.iter().zip(cols) {
        out.push_str(&format!(" {cell:>width$}"));
    }
    out
}

/// The table on stdout: two `#` lines of titles and units, then one line per row; `*` marks
/// the best layout of each world size. `compute` includes the slowdown of overlapped compute;
/// `marginal` is that of the best layouts on best rows, of the same layout elsewhere; `S`, `E`
/// and `SE` are speedup, parallel and scaling efficiency against the layout's smallest
/// projected world, `bound` what limits the row (docs/METHODOLOGY.md, "Scaling efficiency").
/// A MoE model adds `ep` after `pp` and `a2a`, the seconds of MoE AllToAll (part of
/// `exposed`), after `bubble`.
pub fn table(req: &Request, p: &Projection, network: &str) -> String {
    let cols = columns(req);
    let mut out = format!("# {}\n", describe(req, network));
    let titles: Vec<String> = cols.iter().map(|c| c.0.to_string()).collect();
    let units: Vec<String> = cols.iter().map(|c| c.1.to_string()).collect();
    out.push_str(&line('#', &titles, &cols));
    out.push('\n');
    out.push_str(line('#', &units, &cols).trim_end());
    out.push('\n');
    for r in &p.rows {
        out.push_str(&table_row(req, r, &cols));
        out.push('\n');
    }
    out
}

fn table_row(req: &Request, r: &Row, cols: &[Column]) -> String {
    let moe = req.model.is_moe();
    let mut cells = vec![
        r.world.to_string(),
        r.nodes.to_string(),
        r.tp.to_string(),
        r.pp.to_string(),
    ];
    if moe {
        cells.push(r.ep.to_string());
    }
    cells.push(r.dp.to_string());
    let Some(m) = r.metrics else {
        let lead = line(' ', &cells, cols);
        return format!(
            "{lead}  does not fit: needs {:.1} GB of {} GB per GPU",
            r.memory_gb, req.hardware.hbm_gb
        );
    };
    let marginal = if r.best {
        r.marginal_best_tokens_per_s_per_gpu
    } else {
        r.marginal_tokens_per_s_per_gpu
    };
    cells.extend([
        format!("{:.3}", m.step_time_s),
        format!("{:.3}", m.compute_s + m.overlap_slowdown_s),
        format!("{:.3}", m.exposed_comm_s),
        format!("{:.3}", m.overlapped_comm_s),
        format!("{:.3}", m.bubble_s),
    ]);
    if moe {
        cells.push(format!("{:.3}", m.alltoall_s));
    }
    cells.extend([
        format!("{:.0}", m.tokens_per_s),
        format!("{:.0}", m.tokens_per_s_per_gpu),
        format!("{:.1}", 100.0 * m.mfu),
        format!("{:.1}", 100.0 * m.exposed_comm_frac),
        format!("{:.0}", m.power_w_per_gpu),
        format!("{:.2}", m.tokens_per_joule),
        marginal.map_or("-".into(), |x| format!("{x:.0}")),
        r.speedup.map_or("-".into(), |x| format!("{x:.1}")),
        r.parallel_eff
            .map_or("-".into(), |x| format!("{:.1}", 100.0 * x)),
        r.scaling_eff
            .map_or("-".into(), |x| format!("{:.1}", 100.0 * x)),
        r.bound.short().to_string(),
    ]);
    let mut text = line(' ', &cells, cols);
    if r.best {
        text.push_str(" *");
    }
    text
}

/// One line saying what was projected.
pub fn describe(req: &Request, network: &str) -> String {
    let batch = match req.batch {
        Batch::Weak { local } => format!("weak scaling, {local} sequence(s) per GPU"),
        Batch::Strong { global } => format!("strong scaling, global batch {global} sequences"),
    };
    let o = &req.opts;
    let compute = match o.compute_efficiency {
        Some(e) => format!("compute at {:.0}% of peak", 100.0 * e),
        None => "compute as a roofline per part of a layer".to_string(),
    };
    let moe = if req.model.is_moe() {
        format!(
            " (MoE, {} experts, top-{})",
            req.model.experts, req.model.top_k
        )
    } else {
        String::new()
    };
    format!(
        "{}{moe} on {} ({network}), seq {}, {batch}, {compute}, overlap slowdown \
         {:.0}%{}{}{}{}; * = best layout per world size",
        req.model.name,
        req.hardware.name,
        req.seq,
        100.0 * o.overlap_slowdown,
        match o.overlap_source {
            OverlapSource::Measured => format!(
                " (measured; overlapped collectives x{:.3})",
                o.comm_overlap_slowdown
            ),
            OverlapSource::Default => " (Lee et al. 2025)".into(),
            OverlapSource::Given => String::new(),
        },
        if o.reshard {
            ", re-shard after forward"
        } else {
            ""
        },
        if o.hybrid { ", hybrid sharding" } else { "" },
        if o.recompute {
            ", full activation recomputation"
        } else {
            ""
        },
    )
}

/// projection.json: the inputs used, the network parameters read, notes and rows.
pub fn json(
    req: &Request,
    p: &Projection,
    network: &str,
    fit: &FitFile,
    command_line: &[String],
) -> Value {
    let m = &req.model;
    let models: Vec<Value> = fit
        .models
        .iter()
        .map(|w| {
            let params: serde_json::Map<String, Value> = w
                .params
                .iter()
                .map(|p| (p.name.clone(), json!(p.param.value)))
                .collect();
            let mut m = json!({"op": w.op, "algo": w.algo, "dtype": w.dtype,
                               "in_place": w.in_place, "form": w.form, "params": params});
            if let Some(p) = w.proto {
                m["proto"] = json!(p);
            }
            m
        })
        .collect();
    json!({
        "schema": PROJECTION_SCHEMA,
        "collbench_version": env!("CARGO_PKG_VERSION"),
        "created": crate::meta::now_rfc3339(),
        "command_line": command_line,
        "network": {
            "source": network,
            "fit_created": fit.created,
            "sources": fit.sources.iter().map(|s| s.path.clone()).collect::<Vec<_>>(),
            "models": models,
        },
        "model_derived": {
            "total_params": m.total_params(),
            "active_params": m.active_params(),
            "flop_params": m.flop_params(),
            "flops_per_token": m.flops_per_token(req.seq),
        },
        "compute_model": ComputeModel::from_option(req.opts.compute_efficiency).name(),
        "request": req,
        "notes": p.notes,
        "layouts": p.layouts,
        "rows": p.rows,
    })
}

/// The files `--out DIR` receives (replay.csv with `--replay`).
pub fn files(out: &Path, replay: bool) -> Vec<PathBuf> {
    let names = ["projection.csv", "projection.json"];
    let replay_file = replay.then_some("replay.csv");
    names
        .into_iter()
        .chain(replay_file)
        .map(|n| out.join(n))
        .collect()
}

/// Refuses an `--out` whose files an earlier projection wrote, unless `force`.
pub fn check_files(out: &Path, replay: bool, force: bool) -> Result<()> {
    for path in files(out, replay) {
        crate::output::file::check_new(&path, force)?;
    }
    Ok(())
}
