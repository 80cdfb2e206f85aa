//! The files behind `collbench import LOG...`: folders expanded, sizes bounded before a file is
//! read, bytes that are not UTF-8 tolerated (logs hold terminal junk).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The largest log read (a nccl-tests run is a few KiB; a whole job's output rarely 100 MiB).
pub const MAX_LOG_BYTES: u64 = 256 << 20;

/// The most files one import reads from folders.
const MAX_FILES: usize = 10_000;

/// How deep folders are searched.
const MAX_DEPTH: usize = 8;

/// A file to read, and whether the user named it (an error there stops the import) or it was
/// found in a folder (a file there that is no log is left out with a warning).
#[derive(Debug, Clone, PartialEq)]
pub struct LogFile {
    pub path: PathBuf,
    pub named: bool,
}

/// The files of `inputs`: each named file, and the files under each named folder (sorted, hidden
/// ones left out; links to folders and folders deeper than [`MAX_DEPTH`] left out too, each said
/// in `left_out`: a link back up a tree would read it again and again).
pub fn expand(inputs: &[PathBuf], left_out: &mut Vec<String>) -> Result<Vec<LogFile>> {
    let mut out = Vec::new();
    for p in inputs {
        let meta = std::fs::metadata(p).map_err(|e| Error::Input {
            path: p.clone(),
            msg: format!("cannot read: {}", reason(&e)),
        })?;
        if meta.is_dir() {
            walk(p, 0, &mut out, left_out)?;
        } else {
            out.push(LogFile {
                path: p.clone(),
                named: true,
            });
        }
    }
    Ok(out)
}

fn walk(
    dir: &Path,
    depth: usize,
    out: &mut Vec<LogFile>,
    left_out: &mut Vec<String>,
) -> Result<()> {
    if depth > MAX_DEPTH {
        left_out.push(format!(
            "{}: deeper than {MAX_DEPTH} folders below what was named; name it to import it",
            dir.display()
        ));
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    paths.sort();
    for p in paths {
        let link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        if link && p.is_dir() {
            left_out.push(format!(
                "{}: a link to a folder, not followed (name the folder itself to import it)",
                p.display()
            ));
        } else if p.is_dir() {
            walk(&p, depth + 1, out, left_out)?;
        } else if p.is_file() {
            if out.len() >= MAX_FILES {
                return Err(Error::usage(format!(
                    "{} holds more than {MAX_FILES} files; import fewer at a time",
                    dir.display()
                )));
            }
            out.push(LogFile {
                path: p,
                named: false,
            });
        }
    }
    Ok(())
}

/// The text of a log, refused (naming the file) when it holds more than [`MAX_LOG_BYTES`]
/// (read to that cap plus one byte, whatever the file claims: a FIFO or device says 0);
/// bytes that are not UTF-8 become U+FFFD.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = crate::input::read_capped(path, MAX_LOG_BYTES, "log").map_err(|e| match e {
        Error::Input { path, .. } => Error::Input {
            path,
            msg: format!(
                "more than the {} MiB a log may have; split it",
                MAX_LOG_BYTES >> 20
            ),
        },
        e => e,
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
