//! `collbench import`: read logs, convert each run, write one results folder per run.

use std::path::{Path, PathBuf};

use super::convert::{convert, Converted, Overrides};
use super::log::{LogRun, Tool};
use super::{files, names, nccl_json, nccl_text, osu, ParseError};
use crate::collective::Op;
use crate::error::{Error, Result};
use crate::meta::RunStatus;
use crate::output::stdout;
use crate::report::run_dir::{new_unique_dir, RunDir};

/// What the files are: a tool's logs, each run on its own, or NCCL Inspector's per-process
/// logs, read together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Log(Tool),
    Inspector,
}

/// A typed `collbench import`.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub source: Source,
    /// Files and folders, as given.
    pub logs: Vec<PathBuf>,
    /// The results folder (one run) or the folder to put one folder per run in (several).
    pub out: Option<PathBuf>,
    pub overrides: Overrides,
    pub command_line: Vec<String>,
}

/// One run read from one file, ready to be written.
pub(super) struct Ready {
    pub(super) source: PathBuf,
    pub(super) converted: Converted,
}

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

/// One folder per run: `--out` itself for a single run, else `--out/<file>-<n>-<op>` (or
/// `results/import-...` without `--out`), each created new.
pub(super) fn folder_names(req: &ImportRequest, ready: &[Ready]) -> Result<Vec<PathBuf>> {
    if let (Some(out), [_]) = (&req.out, ready) {
        return Ok(vec![out.clone()]);
    }
    let parent = req.out.clone().unwrap_or_else(|| PathBuf::from("results"));
    let mut dirs = Vec::new();
    for (i, r) in ready.iter().enumerate() {
        let stem = r
            .source
            .file_stem()
            .map_or("log".into(), |s| s.to_string_lossy().into_owned());
        let stem: String = stem
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(80)
            .collect();
        let prefix = if req.out.is_some() { "" } else { "import-" };
        let name = format!("{prefix}{stem}-{}-{}", i + 1, r.converted.op);
        dirs.push(new_unique_dir(&parent.join(name))?);
    }
    Ok(dirs)
}

/// Writes one imported run: meta.json, summary.csv, samples.csv (the log's per-iteration times,
/// where it has them) and ranks.csv without rows.
pub(super) fn write_folder(run: &Ready, dir: &Path) -> Result<()> {
    let c = &run.converted;
    let info = c.meta.import.as_ref();
    let truncated = info.is_some_and(|i| i.truncated);
    super::publish::publish(dir, |staging| {
        let mut folder = RunDir::create(staging, &c.meta)?;
        for (i, rec) in c.records.iter().enumerate() {
            let samples = c.samples.get(i).map_or(&[][..], |s| s.as_slice());
            folder.append_point(rec, samples, &[])?;
        }
        let (status, error) = match truncated {
            true => (
                RunStatus::Failed,
                Some("the log was cut inside this run's table; its complete rows were kept".into()),
            ),
            false => (RunStatus::Complete, None),
        };
        folder.finish(status, error)
    })?;
    const SHOWN: usize = 4;
    for w in c.warnings.iter().take(SHOWN) {
        crate::say!("collbench: warning: {}: {w}", run.source.display());
    }
    if c.warnings.len() > SHOWN {
        crate::say!(
            "collbench: warning: {}: and {} more like these (meta.json `import.notes` in {})",
            run.source.display(),
            c.warnings.len() - SHOWN,
            dir.display()
        );
    }
    let lines = info.map_or([0, 0], |i| i.lines);
    stdout::println(&format!(
        "{}: lines {}-{}: {} {} world {}: {} points -> {}{}",
        run.source.display(),
        lines[0],
        lines[1],
        c.meta.backend,
        c.op,
        c.meta.ranks,
        c.records.len(),
        dir.display(),
        if truncated {
            " (the log was cut; complete rows kept)"
        } else {
            ""
        }
    ));
    Ok(())
}

pub(super) fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
