//! The `collbench plot` command: read the runs, fit and projection, build the figures, write
//! them as PNG and SVG files.

use std::path::{Path, PathBuf};

use super::args::PlotRequest;
use super::draw::{write_png, write_svg};
use super::figure::Figure;
use super::{fitlines, measured, panels, projection, worlds};
use crate::error::{Error, Result};
use crate::fit::schema::FitFile;
use crate::report::run_reader::{read_run, Run};

/// Runs the command; exit code 0 (errors are `Err`).
pub fn run_plot(req: &PlotRequest) -> Result<u8> {
    let runs: Vec<Run> = req
        .runs
        .iter()
        .map(|d| read_run(d))
        .collect::<Result<_>>()?;
    let fit = req.fit.as_deref().map(FitFile::read).transpose()?;
    let proj = req
        .projection
        .as_deref()
        .map(projection::read)
        .transpose()?;
    let mut notes = Vec::new();
    if fit.is_some() && runs.is_empty() {
        notes.push("--fit is drawn over measured points; give the runs it was fitted from".into());
    }
    let mut figs = run_figures(&runs, fit.as_ref(), req.sizes.as_deref(), &mut notes);
    if let Some(p) = &proj {
        figs.extend(projection::figures(p));
    }
    let out = out_dir(req)?;
    for fig in figs.iter().filter(|f| !f.is_empty()) {
        for path in figure_paths(fig, &out, req) {
            crate::output::file::check_new(&path, req.force)?;
        }
    }
    let mut written = 0;
    for fig in &figs {
        if fig.is_empty() {
            notes.push(format!("{}: nothing to draw", fig.name));
            continue;
        }
        for path in write_figure(fig, &out, req)? {
            crate::output::stdout::println(&path.display().to_string());
            written += 1;
        }
    }
    for n in &notes {
        crate::say!("collbench: note: {n}");
    }
    if written == 0 {
        return Err(Error::usage(
            "no figure could be drawn: the inputs hold no correct measured point or projected \
             layout",
        ));
    }
    crate::say!(
        "collbench: {written} figure files written to {}",
        out.display()
    );
    Ok(0)
}

/// Every figure of the measured runs, in op order: busbw and latency by size (fitted lines
/// over the latency points when `fit` is given), then by world size when several were measured.
pub fn run_figures(
    runs: &[Run],
    fit: Option<&FitFile>,
    sizes: Option<&[usize]>,
    notes: &mut Vec<String>,
) -> Vec<Figure> {
    let mut figs = Vec::new();
    for (op, all) in measured::group(runs, notes) {
        for panel in panels::split(all, runs) {
            let start = figs.len();
            let lines = &panel.lines;
            let labeler = measured::Labeler::new(lines.keys(), runs);
            figs.push(measured::busbw_vs_size(op, lines, &labeler));
            let mut lat = measured::latency_vs_size(op, lines, &labeler);
            if let Some(f) = fit {
                fitlines::overlay_sizes(&mut lat, op, lines, f, notes);
            }
            figs.push(lat);
            if worlds::has_worlds(lines) {
                let chosen = worlds::chosen_sizes(lines, sizes);
                figs.extend(worlds::vs_world(op, lines, &labeler, &chosen, fit));
            }
            figs[start..].iter_mut().for_each(|f| panel.tag(f));
        }
    }
    figs
}

/// The output folder, created.
fn out_dir(req: &PlotRequest) -> Result<PathBuf> {
    let dir = match (&req.out, req.runs.first(), &req.projection) {
        (Some(o), _, _) => o.clone(),
        (None, Some(run), _) => run.join("plots"),
        (None, None, Some(p)) if p.is_dir() => p.join("plots"),
        (None, None, Some(p)) => p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .join("plots"),
        (None, None, None) => PathBuf::from("plots"),
    };
    if dir.exists() && !dir.is_dir() {
        return Err(Error::usage(format!(
            "--out {}: not a folder; choose another --out",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

fn write_figure(fig: &Figure, out: &Path, req: &PlotRequest) -> Result<Vec<PathBuf>> {
    let paths = figure_paths(fig, out, req);
    for p in &paths {
        match p.extension().and_then(|e| e.to_str()) {
            Some("png") => write_png(fig, p)?,
            _ => write_svg(fig, p)?,
        }
    }
    Ok(paths)
}

/// The files `fig` is written to: PNG and/or SVG as asked.
fn figure_paths(fig: &Figure, out: &Path, req: &PlotRequest) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if req.png {
        paths.push(out.join(format!("{}.png", fig.name)));
    }
    if req.svg {
        paths.push(out.join(format!("{}.svg", fig.name)));
    }
    paths
}
