//! Output files (fit.json, report.html, figures, verdicts, projections, meta.json): written to
//! a temporary file next to the final one, synced and renamed, so that a crash or a full disk
//! never leaves a half or empty file under the final name; and an existing file is replaced
//! only with `--force`.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Refuses an output that is already there unless `force`; called before the work that
/// produces it, so that a refusal costs nothing.
pub fn check_new(path: &Path, force: bool) -> Result<()> {
    if path.is_dir() {
        return Err(Error::usage(format!(
            "{} is a folder; give the path of a file to write there",
            path.display()
        )));
    }
    if force || fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "{} already exists; pass --force to overwrite it, or choose another output path",
        path.display()
    )))
}

/// Writes `bytes` as `path`, refusing to replace an existing file unless `force`.
pub fn write_output(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    check_new(path, force)?;
    write_atomic(path, bytes)
}

/// Writes `bytes` as `path` atomically (replacing what is there). On failure the temporary file
/// is removed and the error names `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |tmp| {
        File::create(tmp)
            .and_then(|mut f| f.write_all(bytes))
            .map_err(|e| Error::io(path, e))
    })
}

/// Lets `fill` create the file at a temporary path with the same extension (for encoders that
/// take a path and pick the format by its extension), then syncs it and renames it to `path`.
/// Whatever fails, the temporary file is removed; `fill`'s errors should name `path`.
pub fn write_atomic_with(path: &Path, fill: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let tmp = tmp_path(path);
    let result = fill(&tmp).and_then(|()| {
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .and_then(|()| fs::rename(&tmp, path))
            .map_err(|e| Error::io(path, e))
    });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `dir/.name.tmp-PID.ext`: hidden, unique to this process, same extension as `path`.
pub fn tmp_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let pid = std::process::id();
    let name = match path.extension() {
        Some(ext) => format!(".{stem}.tmp-{pid}.{}", ext.to_string_lossy()),
        None => format!(".{stem}.tmp-{pid}"),
    };
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_an_existing_output_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fit.json");
        write_output(&path, b"one", false).unwrap();
        let e = write_output(&path, b"two", false).unwrap_err().to_string();
        assert!(
            e.contains("fit.json already exists") && e.contains("--force"),
            "{e}"
        );
        assert_eq!(fs::read(&path).unwrap(), b"one");
        write_output(&path, b"two", true).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "a temporary file was left"
        );
    }

    #[test]
    fn a_failed_write_names_the_final_file_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plot.png");
        let e = write_atomic_with(&path, |tmp| {
            fs::write(tmp, b"half").unwrap();
            Err(Error::usage("disk full"))
        });
        assert!(e.is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        let e = write_atomic(&dir.path().join("missing/x.json"), b"x").unwrap_err();
        assert!(e.to_string().contains("missing/x.json"), "{e}");
    }

    #[test]
    fn the_temporary_file_keeps_the_extension() {
        let tmp = tmp_path(Path::new("out/latency.png"));
        let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(".latency.tmp-") && name.ends_with(".png"),
            "{name}"
        );
    }
}
