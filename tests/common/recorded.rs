//! What several test files share around one recorded sweep: the sweep itself, run once per
//! test binary and kept for its tests, and the check that a command refused its input.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use super::{serial, sweep_ok, Run};

/// One real sweep, recorded the first time a test asks for it and kept (with its temporary
/// folder) until the test binary ends.
pub struct Recorded(OnceLock<(tempfile::TempDir, PathBuf)>);

impl Recorded {
    pub const fn new() -> Self {
        Recorded(OnceLock::new())
    }

    /// The results folder of `sweep args...`, run (alone) on the first call.
    pub fn dir(&'static self, args: &[&str], limit: Duration) -> &'static Path {
        let (_, dir) = self.0.get_or_init(|| {
            let _guard = serial();
            let tmp = tempfile::tempdir().unwrap();
            let out = tmp.path().join("run");
            sweep_ok(args, &out, limit);
            (tmp, out)
        });
        dir
    }
}

/// Exit 2, exactly one line on stderr holding every `names`, no panic.
pub fn refused(r: &Run, names: &[&str]) {
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.code(), 2, "{r:?}");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "one line expected: {}", r.stderr);
    for n in names {
        assert!(lines[0].contains(n), "'{n}' missing from: {}", lines[0]);
    }
}
