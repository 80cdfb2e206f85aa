//! The `collbench report` command: read the run, the fit (or fit it) and the verdict, draw the
//! figures, write the page.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{render, ReportInput};
use crate::error::{Error, Result};
use crate::fit::build::{build, BuildOptions};
use crate::fit::schema::FitFile;
use crate::plot::command::run_figures;
use crate::report::run_reader::{read_run, Run};

/// Schema id prefix of verdict files.
pub const VERDICT_SCHEMA_PREFIX: &str = "collbench.verdict/";

/// What `collbench report` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportRequest {
    pub run: PathBuf,
    pub fit: Option<PathBuf>,
    pub verdict: Option<PathBuf>,
    pub output: Option<PathBuf>,
    /// `--force`: replace an existing page.
    pub force: bool,
}

/// Runs the command; exit code 0 (errors are `Err`).
pub fn run_report(req: &ReportRequest) -> Result<u8> {
    let output = req
        .output
        .clone()
        .unwrap_or_else(|| req.run.join("report.html"));
    check_writable(&output)?;
    crate::output::file::check_new(&output, req.force)?;
    let run = read_run(&req.run)?;
    let (fit, fit_origin) = fit_for(&run, req.fit.as_deref())?;
    let verdict = req.verdict.as_deref().map(read_verdict).transpose()?;
    if let (Some((v, _)), Some(path)) = (&verdict, &req.verdict) {
        check_verdict_judged(v, path, &req.run)?;
    }
    let mut notes = Vec::new();
    let figures = run_figures(std::slice::from_ref(&run), Some(&fit), None, &mut notes);
    let html = render(&ReportInput {
        run: &run,
        fit: &fit,
        fit_origin,
        verdict,
        figures,
        notes,
    })?;
    crate::output::file::write_output(&output, html.as_bytes(), req.force)?;
    crate::say!("collbench: report written to {}", output.display());
    Ok(0)
}

/// The given fit.json, or a fit of the run made now (not written anywhere).
fn fit_for(run: &Run, path: Option<&Path>) -> Result<(FitFile, String)> {
    match path {
        Some(p) => {
            let fit = FitFile::read(p)?;
            let origin = format!("From {} (created {})", p.display(), fit.created);
            Ok((fit, origin))
        }
        None => Ok((
            build(std::slice::from_ref(run), &BuildOptions::default()),
            "Fitted on the fly from this run, by the method of collbench fit (not written; \
             `collbench fit RUN -o fit.json` keeps it)"
                .into(),
        )),
    }
}

/// Reads a verdict file: any JSON object, refused when it names another schema.
fn read_verdict(path: &Path) -> Result<(Value, String)> {
    let bad = |msg: String| Error::Input {
        path: path.to_path_buf(),
        msg,
    };
    let text =
        crate::input::read_text_capped(path, crate::input::MAX_DOCUMENT_BYTES, "verdict.json")?;
    let v: Value = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "not valid JSON ({e}); give the verdict.json that collbench accept wrote"
        ))
    })?;
    if !v.is_object() {
        return Err(bad(
            "not a JSON object; give the verdict.json that collbench accept wrote".into(),
        ));
    }
    if let Some(schema) = v.get("schema").and_then(|s| s.as_str()) {
        if !schema.starts_with(VERDICT_SCHEMA_PREFIX) {
            return Err(bad(format!(
                "schema '{schema}' is not a verdict ({VERDICT_SCHEMA_PREFIX}v1); give the \
                 verdict.json that collbench accept wrote"
            )));
        }
    }
    Ok((v, path.display().to_string()))
}

/// Refuses a verdict whose `runs[]` (the folders `accept` judged) does not include `run`: the
/// page would show one cluster's verdict over another's measurements. A judged folder matches
/// when it resolves to `run`, or by its folder name: a run copied or moved keeps its name
/// (default names are unique run ids), and `accept` may have judged it from another working
/// folder.
fn check_verdict_judged(verdict: &Value, path: &Path, run: &Path) -> Result<()> {
    let Some(runs) = verdict.get("runs").and_then(Value::as_array) else {
        return Ok(());
    };
    let judged: Vec<&str> = runs
        .iter()
        .filter_map(|r| r.get("path").and_then(Value::as_str))
        .collect();
    let here = std::fs::canonicalize(run).unwrap_or_else(|_| run.to_path_buf());
    let same = |p: &&str| {
        std::fs::canonicalize(p).is_ok_and(|c| c == here)
            || Path::new(p)
                .file_name()
                .is_some_and(|n| Some(n) == here.file_name())
    };
    if judged.iter().any(same) {
        return Ok(());
    }
    Err(Error::Input {
        path: path.to_path_buf(),
        msg: format!(
            "judged {}, not {}; give the verdict.json that `collbench accept` wrote for this run",
            if judged.is_empty() {
                "no runs".to_string()
            } else {
                judged.join(", ")
            },
            run.display()
        ),
    })
}

fn check_writable(path: &Path) -> Result<()> {
    crate::fit::command::check_writable(path)?;
    if path.is_dir() {
        return Err(Error::usage(format!(
            "-o {}: is a folder; give a file name such as report.html",
            path.display()
        )));
    }
    Ok(())
}
