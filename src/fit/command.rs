//! The `collbench fit` command: read runs (or a fit.json), fit, write, print, predict.

use std::path::{Path, PathBuf};

use super::build::{build, BuildOptions};
use super::curves::require_points;
use super::export::{export, ExportRequest};
use super::predict::{describe, parse_query, predict};
use super::schema::FitFile;
use crate::error::{Error, Result};
use crate::fit::table as fit_table;
use crate::output::file::{check_new, write_output};
use crate::report::run_reader::{read_run, Run};

/// What `collbench fit` was asked to do, parsed.
#[derive(Debug)]
pub struct FitRequest {
    /// Results folders, or one fit.json.
    pub inputs: Vec<PathBuf>,
    /// Where the new fit.json goes.
    pub output: PathBuf,
    /// A `--predict` query.
    pub predict: Option<String>,
    /// Print the prediction as one JSON object.
    pub json: bool,
    /// An `--export` of the fit for another tool.
    pub export: Option<ExportRequest>,
    /// `--force`: replace an existing fit.json or export file.
    pub force: bool,
}

/// Runs the command; the exit code is 0 (errors are `Err`).
pub fn run_fit(req: &FitRequest) -> Result<u8> {
    let query = req.predict.as_deref().map(parse_query).transpose()?;
    let fit = match existing_fit(&req.inputs)? {
        Some(fit) => fit,
        None => fit_runs(req)?,
    };
    if let Some(q) = query {
        let p = predict(&fit, &q)?;
        if let Some(w) = &p.warning {
            crate::say!("collbench: warning: {w}");
        }
        if req.json {
            let text = serde_json::to_string(&p)
                .map_err(|e| Error::usage(format!("cannot encode the prediction: {e}")))?;
            crate::output::stdout::println(&text);
        } else {
            crate::output::stdout::println(&describe(&p));
        }
    }
    if let Some(x) = &req.export {
        write_export(&fit, x, req.force)?;
    }
    Ok(0)
}

/// Writes `--export` to its file (status on stderr) or to stdout.
fn write_export(fit: &FitFile, x: &ExportRequest, force: bool) -> Result<()> {
    if let Some(path) = &x.out {
        check_new(path, force)?;
    }
    let text = export(fit, x.format, &x.opts)?;
    match &x.out {
        Some(path) => {
            write_output(path, text.as_bytes(), force)?;
            crate::say!(
                "collbench: {} export written to {}",
                x.format,
                path.display()
            );
        }
        None => crate::output::stdout::print(&text),
    }
    Ok(())
}

/// A single input that is a file is read as a fit.json (to predict from it).
fn existing_fit(inputs: &[PathBuf]) -> Result<Option<FitFile>> {
    match inputs {
        [] => Err(Error::usage(
            "give one or more results folders to fit (e.g. collbench fit results/<run>), or a \
             fit.json with --predict or --export",
        )),
        // Anything but a folder is read as a fit.json, so that what is wrong with it (a link
        // loop, no such file) is said as such, not as "not a results folder".
        [one] if names_a_file(one) => Ok(Some(FitFile::read(one)?)),
        _ => Ok(None),
    }
}

/// Whether `p` is (or, missing, is named as) a file rather than a results folder: something
/// that is there and is no folder (a link loop too), or a missing `*.json`.
fn names_a_file(p: &Path) -> bool {
    match std::fs::symlink_metadata(p) {
        Ok(_) => !p.is_dir(),
        Err(_) => p.extension().is_some_and(|e| e == "json"),
    }
}

fn fit_runs(req: &FitRequest) -> Result<FitFile> {
    if let Some(f) = req.inputs.iter().find(|p| p.is_file()) {
        return Err(Error::Input {
            path: f.clone(),
            msg: "is a file; give results folders to fit, or one fit.json alone to predict from"
                .into(),
        });
    }
    check_writable(&req.output)?;
    check_new(&req.output, req.force)?;
    let runs: Vec<Run> = req
        .inputs
        .iter()
        .map(|d| read_run(d))
        .collect::<Result<_>>()?;
    require_points(&runs)?;
    let fit = build(&runs, &BuildOptions::default());
    if fit.curves.is_empty() {
        return Err(Error::Input {
            path: req.inputs[0].clone(),
            msg: format!(
                "nothing could be fitted: {}",
                fit.notes.first().map_or("no usable points", String::as_str)
            ),
        });
    }
    fit.write(&req.output)?;
    if req.export.as_ref().is_some_and(|x| x.out.is_none()) {
        // stdout carries the export.
        eprint!("{}", fit_table::render(&fit));
    } else if !req.json {
        crate::output::stdout::print(&fit_table::render(&fit));
    }
    crate::say!(
        "collbench: {} curves and {} cross-world models written to {}",
        fit.curves.len(),
        fit.models.len(),
        req.output.display()
    );
    let noisy = fit.curves.iter().filter(|c| c.too_noisy).count();
    if noisy > 0 {
        let imported = runs.iter().all(crate::fit::build::is_imported);
        crate::say!(
            "collbench: warning: {noisy} of {} curves are too noisy to fit (see the notes: the \
             sizes and their errors); {}",
            fit.curves.len(),
            crate::fit::envelope::noise_advice(imported)
        );
    }
    Ok(fit)
}

/// Fails unless `path`'s folder exists (so a long computation is not lost at the last step).
pub(crate) fn check_writable(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Error::usage(format!(
            "-o {}: folder {} does not exist; create it or choose another path",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}
