//! Writing an imported folder all or nothing: the files are written into a hidden staging
//! folder beside the target and moved into place only once complete, so a disk that fills (or
//! any other failure) leaves no half folder, no 0-byte summary.csv and no meta.json that says
//! `running` for ever: only the error.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::meta::META_FILE;

/// Writes a folder through `fill` (given the staging folder) and moves it to `dir`; on failure
/// the staging folder is removed and `dir` is left as it was.
pub fn publish<T>(dir: &Path, fill: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    crate::report::run_dir::check_target(dir)?;
    let staging = staging_of(dir);
    let _ = std::fs::remove_dir_all(&staging);
    let done = fill(&staging).and_then(|v| move_into(&staging, dir).map(|()| v));
    if done.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    done
}

/// `.NAME.importing-PID` beside `dir`: on the same file system, so the move is a rename.
fn staging_of(dir: &Path) -> PathBuf {
    let name = dir
        .file_name()
        .map_or("import".into(), |n| n.to_string_lossy().into_owned());
    dir.with_file_name(format!(".{name}.importing-{}", std::process::id()))
}

/// Renames `staging` to `dir`, or where `dir` already exists (empty, or with other files)
/// moves its files in one by one, meta.json last: a folder with a meta.json is whole.
fn move_into(staging: &Path, dir: &Path) -> Result<()> {
    let moved = |e: std::io::Error| Error::io(dir, e);
    if !dir.exists() {
        return std::fs::rename(staging, dir).map_err(moved);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(staging)
        .map_err(moved)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort_by_key(|p| p.file_name().is_some_and(|n| n == META_FILE));
    for f in files {
        let to = dir.join(f.file_name().unwrap_or_default());
        std::fs::rename(&f, to).map_err(moved)?;
    }
    std::fs::remove_dir(staging).map_err(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::summary_csv::SUMMARY_FILE;

    #[test]
    fn a_failed_fill_leaves_nothing_and_a_whole_one_is_moved_into_place() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out");
        let failed: Result<()> = publish(&dir, |s| {
            std::fs::create_dir(s).unwrap();
            std::fs::write(s.join(SUMMARY_FILE), "").unwrap();
            Err(Error::usage("disk full"))
        });
        assert!(failed.is_err());
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
        let fill = |s: &Path| {
            std::fs::create_dir(s)?;
            std::fs::write(s.join(SUMMARY_FILE), "x\n")?;
            std::fs::write(s.join(META_FILE), "{}\n")?;
            Ok(7)
        };
        let fill = |s: &Path| fill(s).map_err(|e: std::io::Error| Error::io(s, e));
        assert_eq!(publish(&dir, fill).unwrap(), 7);
        assert!(dir.join(META_FILE).is_file() && dir.join(SUMMARY_FILE).is_file());
        // An existing folder without results takes the files; one with results is refused.
        let existing = tmp.path().join("existing");
        std::fs::create_dir(&existing).unwrap();
        std::fs::write(existing.join("notes.txt"), "mine").unwrap();
        publish(&existing, fill).unwrap();
        assert!(existing.join("notes.txt").is_file() && existing.join(META_FILE).is_file());
        let e = publish(&existing, fill).unwrap_err().to_string();
        assert!(e.contains("already holds results"), "{e}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2);
    }
}
