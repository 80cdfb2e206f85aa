//! Visible, requirable skips for the unit tests, as tests/common/skip.rs gives the integration
//! tests: `SKIPPED <test>: why` goes straight to the process's stderr (libtest captures only
//! `print!`/`eprint!`), and a test whose tool `COLLBENCH_TEST_REQUIRE` names fails instead.

use std::io::Write;

/// Whether the running test can use `tool`; `missing` says why not (None: it can).
pub fn can_use(tool: &str, missing: Option<String>) -> bool {
    let Some(why) = missing else {
        return true;
    };
    let name = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let required = std::env::var("COLLBENCH_TEST_REQUIRE").unwrap_or_default();
    if required.split(',').any(|t| t.trim() == tool) {
        panic!("{name}: {tool} is required here (COLLBENCH_TEST_REQUIRE names it) but {why}");
    }
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {name}: {why}");
    false
}
