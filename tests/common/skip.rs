//! Tests that need a tool the machine may lack (mpirun, network namespaces, sockperf, Chromium)
//! skip without it, visibly: `SKIPPED test: why` is written straight to the process's stderr,
//! which libtest does not capture (it captures only `print!`/`eprint!`), so the line shows in a
//! plain `cargo test` run. Where the tools are known to be installed (CI), set
//! `COLLBENCH_TEST_REQUIRE=mpirun,netns,sockperf,chromium`: a test that would skip for a tool
//! named there fails instead.

use std::io::Write;

/// The variable naming the tools whose absence fails a test instead of skipping it.
pub const REQUIRE_VAR: &str = "COLLBENCH_TEST_REQUIRE";

/// The tools a test can skip for.
/// (`gpu`: an NVIDIA GPU with its driver and libnccl, for the ignored GPU tests; `libnccl`: the
/// real NCCL runtime and its nccl.h, found as the loader finds them, for the tests of the NCCL
/// backend that need no GPU; `libcublas`: pip's cuBLAS and its headers, for the GEMM load's
/// loader; `slurm`: the two-node cluster of scripts/slurm-local.sh; `tmpfs`:
/// root's small tmpfs mounts, for full disks; `cc` and `nofile` are the unit tests'.)
pub const TOOLS: [&str; 11] = [
    "mpirun",
    "netns",
    "sockperf",
    "chromium",
    "gpu",
    "libnccl",
    "libcublas",
    "slurm",
    "tmpfs",
    "cc",
    "nofile",
];

/// Whether the running test can use `tool`; `missing` says why not (None: it can). Without the
/// tool the test is reported SKIPPED on the run's output (named by its thread, which libtest
/// names after the test), or fails when [`REQUIRE_VAR`] names `tool`.
pub fn can_use(tool: &str, missing: Option<String>) -> bool {
    assert!(TOOLS.contains(&tool), "unknown tool {tool}");
    let Some(why) = missing else {
        return true;
    };
    if required().iter().any(|t| t == tool) {
        panic!(
            "{}: {tool} is required here ({REQUIRE_VAR} names it) but {why}",
            test_name()
        );
    }
    skipped(&why);
    false
}

/// Says `SKIPPED <test>: why` on the run's output (not captured by libtest).
pub fn skipped(why: &str) {
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {}: {why}", test_name());
}

/// The running test's name: libtest names each test's thread after it.
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string()
}

/// The tools [`REQUIRE_VAR`] names; panics on a name that is not one of [`TOOLS`].
fn required() -> Vec<String> {
    let list = std::env::var(REQUIRE_VAR).unwrap_or_default();
    let names: Vec<String> = list
        .split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    for n in &names {
        assert!(
            TOOLS.contains(&n.as_str()),
            "{REQUIRE_VAR}={list}: unknown tool {n}; known are {}",
            TOOLS.join(", ")
        );
    }
    names
}

/// Whether `program` is on PATH.
pub fn on_path(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}
