//! `collbench import` as the import tests run it, on the logs of tests/data/import.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{run, Run};

const LIMIT: Duration = Duration::from_secs(120);

/// A file of tests/data/import, as a path argument.
pub fn data(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/import");
    dir.join(name).to_str().unwrap().to_string()
}

/// `collbench import ARGS`.
pub fn import(args: &[&str]) -> Run {
    let mut full = vec!["import"];
    full.extend_from_slice(args);
    run(&full, LIMIT)
}

/// `r`, which must have exited 0.
pub fn ok(r: Run) -> Run {
    assert_eq!(r.code(), 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    r
}

/// A path as an argument.
pub fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The folders an import wrote under `parent` (one per run of its logs), sorted.
pub fn sorted_dirs(parent: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}
