//! Writing imported runs: one results folder each, named from its source, written whole.

use std::path::{Path, PathBuf};

use super::convert::Converted;
use super::request::ImportRequest;
use crate::error::Result;
use crate::meta::RunStatus;
use crate::output::stdout;
use crate::report::run_dir::{new_unique_dir, RunDir};

/// One run read from one file, ready to be written.
pub(super) struct Ready {
    pub(super) source: PathBuf,
    pub(super) converted: Converted,
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
