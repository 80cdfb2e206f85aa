//! Running `collbench accept` for the accept test files, and the shape of its refusals.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{recorded, Run};

/// The hang limit of one accept: it may run a sweep of its own.
pub const LIMIT: Duration = Duration::from_secs(120);

/// Writes `text` to `dir/name` (a criteria file) and returns its path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

/// `collbench accept args`, waited for up to [`LIMIT`].
pub fn accept(args: &[&str]) -> Run {
    super::run_cmd("accept", args, LIMIT)
}

/// Exit 2 with exactly one line on stderr holding every `names`, nothing on stdout.
pub fn refused(r: &Run, names: &[&str]) {
    recorded::refused(r, names);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}
