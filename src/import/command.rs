//! `collbench import`: read logs, convert each run, write one results folder per run.

use std::path::Path;

use super::convert::convert;
use super::log::{LogRun, Tool};
pub use super::request::{ImportRequest, Source};
use super::write::{folder_names, shown, write_folder, Ready};
use super::{files, names, nccl_json, nccl_text, osu, ParseError};
use crate::collective::Op;
use crate::error::{Error, Result};

/// Runs the command: exit 0 when at least one run was imported, errors (exit 2) otherwise.
pub fn run_import(req: &ImportRequest) -> Result<u8> {
    let tool = match req.source {
        Source::Log(tool) => tool,
        Source::Inspector => return super::inspector_run::run(req),
    };
    let mut refused = Vec::new();
    let found = files::expand(&req.logs, &mut refused)?;
    let mut ready = Vec::new();
    for file in &found {
        match read_file(req, tool, &file.path) {
            Ok(runs) => ready.extend(runs),
            Err(e) if file.named => return Err(e),
            // A file found in a folder that is not a log is left out, with one line.
            Err(e) => refused.push(e.to_string()),
        }
    }
    for line in &refused {
        crate::say!("collbench: warning: left out: {line}");
    }
    if ready.is_empty() {
        return Err(Error::usage(format!(
            "no {} run found in {}; nothing imported",
            tool.name(),
            shown(&req.logs)
        )));
    }
    let dirs = folder_names(req, &ready)?;
    for (run, dir) in ready.iter().zip(&dirs) {
        write_folder(run, dir)?;
    }
    Ok(0)
}

/// The runs of one file, converted; runs of tests collbench does not measure are left out with
/// a warning. A file with no run at all is an error naming it and the line.
fn read_file(req: &ImportRequest, tool: Tool, path: &Path) -> Result<Vec<Ready>> {
    let text = files::read_text(path)?;
    let at = |e: ParseError| Error::Input {
        path: path.to_path_buf(),
        msg: format!("line {}: {}", e.line, e.msg),
    };
    let runs = match tool {
        Tool::NcclTests if nccl_json::looks_like_json(&text) => {
            nccl_json::parse(&text).map_err(at)?
        }
        Tool::NcclTests => nccl_text::parse(&text).map_err(at)?,
        Tool::Osu => osu::parse(&text).map_err(at)?,
    };
    let source = path.display().to_string();
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for run in &runs {
        let converted = op_of(req, tool, run, path).and_then(|(op, note)| {
            let mut c = convert(
                tool,
                run,
                op,
                &source,
                &req.overrides,
                req.command_line.clone(),
            )?;
            if let (Some(note), Some(info)) = (note, c.meta.import.as_mut()) {
                info.notes.insert(0, note);
            }
            Ok(c)
        });
        match converted {
            Ok(c) if c.records.is_empty() => skipped.push(format!(
                "lines {}-{}: no point collbench can hold{}",
                run.first_line,
                run.last_line,
                c.warnings
                    .first()
                    .map_or(String::new(), |w| format!(" ({w})"))
            )),
            Ok(c) => out.push(Ready {
                source: path.to_path_buf(),
                converted: c,
            }),
            Err(why) => skipped.push(format!("lines {}-{}: {why}", run.first_line, run.last_line)),
        }
    }
    if out.is_empty() {
        return Err(Error::Input {
            path: path.to_path_buf(),
            msg: first_and_count(&skipped),
        });
    }
    const SHOWN: usize = 4;
    for s in skipped.iter().take(SHOWN) {
        crate::say!("collbench: warning: {}: {s}", path.display());
    }
    if skipped.len() > SHOWN {
        crate::say!(
            "collbench: warning: {}: and {} more runs left out",
            path.display(),
            skipped.len() - SHOWN
        );
    }
    Ok(out)
}

/// One line for many skipped runs: the first reason (at most a few hundred bytes) and how many
/// more there were; a thousand runs of one log gave an 80 KB line.
fn first_and_count(skipped: &[String]) -> String {
    const MOST: usize = 300;
    let first = skipped.first().map_or("no run", String::as_str);
    let mut text: String = first.chars().take(MOST).collect();
    if text.len() < first.len() {
        text.push_str("...");
    }
    match skipped.len() {
        0 | 1 => text,
        n => format!("{text}; and {} more runs, none importable", n - 1),
    }
}

/// The op of a run: `--test`, else what the log names, else the file name, else (nccl-tests)
/// what its columns say ([`super::infer`]), with the note that says so.
fn op_of(
    req: &ImportRequest,
    tool: Tool,
    run: &LogRun,
    path: &Path,
) -> std::result::Result<(Op, Option<String>), String> {
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    match tool {
        Tool::NcclTests => {
            let from_name = file_name.as_deref().and_then(names::nccl_test_in_name);
            if let (Some(given), Some(own)) = (req.overrides.test.as_deref(), run.test.as_deref()) {
                if names::nccl_test_op(given)? != names::nccl_test_op(own)? {
                    return Err(osu::contradiction(&format!("{own}'s"), given));
                }
            }
            let test = req
                .overrides
                .test
                .as_deref()
                .or(run.test.as_deref())
                .or(from_name);
            match test {
                Some(t) => names::nccl_test_op(t).map(|op| (op, None)),
                None => {
                    let world = super::convert::world_of(run, &req.overrides)?;
                    let (op, note) = super::infer::infer_op(run, world)?;
                    Ok((op, Some(note)))
                }
            }
        }
        Tool::Osu => osu::op_of(run, req.overrides.test.as_deref()).map(|op| (op, None)),
    }
}
