//! The NCCL backend's local launcher without a GPU, through the bootstrap rehearsal
//! (`COLLBENCH_NCCL_BOOTSTRAP_ONLY=1`, real rank processes, the real libnccl): Ctrl-C to the
//! whole process group, as a terminal sends it, at whatever moment it lands, leaves no rank
//! behind and no results folder `running`, and the launcher says one line. SKIPPED without the
//! library.

#![cfg(feature = "nccl")]

mod common;

use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use collbench::backend::nccl::search;
use collbench::meta::{Meta, RunStatus};
use common::{command, hang_limit, marked, marker, Spawned, MARKER_ENV};

#[test]
fn nccl_ctrl_c_to_the_launch_at_any_moment_leaves_no_rank_and_no_running_folder() {
    let sites = search::python_site_dirs();
    let lib = search::pip_libraries(&sites).into_iter().next();
    let missing = lib
        .is_none()
        .then(|| format!("no pip NCCL: {}", search::describe_sites(&sites)));
    if !common::skip::can_use("libnccl", missing) {
        return;
    }
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mark = marker();
    let mut cmd = command(&[
        "sweep",
        "--backend",
        "nccl",
        "--ranks",
        "6",
        "-b",
        "8",
        "-e",
        "8",
    ]);
    cmd.arg("--out").arg(&out);
    cmd.env("COLLBENCH_NCCL_BOOTSTRAP_ONLY", "1")
        .env(MARKER_ENV, &mark)
        // Found by each rank through python3, as a PyTorch user's NCCL is: the ranks live long
        // enough that the signal usually lands while they run (either way the checks hold).
        .env_remove("COLLBENCH_NCCL_LIB");
    cmd.process_group(0);
    let started = Instant::now();
    let mut launch = Spawned::start(cmd);
    let launcher = launch.child.id() as libc::pid_t;
    // Until a rank runs (a process the launcher gave its rank) or the launch has ended by
    // itself.
    let is_rank = |pid: u32| {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        env.split(|&b| b == 0)
            .any(|v| v.starts_with(b"COLLBENCH_NCCL_RANK="))
    };
    let ranks = || marked(&mark).into_iter().filter(|p| is_rank(p.pid)).count();
    while ranks() == 0 && launch.child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < hang_limit(Duration::from_secs(60)),
            "no rank started"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: kill(2) to the process group this test made for the launcher.
    unsafe { libc::kill(-launcher, libc::SIGINT) };
    let r = launch.finish(started, hang_limit(Duration::from_secs(60)));
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "one line: {r:?}");
    match r.code() {
        130 => assert!(lines[0].starts_with("collbench: interrupted"), "{r:?}"),
        // The bootstrap had already failed (no GPU) when the signal came.
        2 => assert!(lines[0].contains("ncclCommInitRank"), "{r:?}"),
        other => panic!("exit {other}: {r:?}"),
    }
    // Every process of the launch ends (ranks and what they started): none is left behind.
    let ended = Instant::now();
    while !marked(&mark).is_empty() {
        let left = marked(&mark);
        assert!(
            ended.elapsed() < hang_limit(Duration::ZERO),
            "left behind: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // A folder that exists is closed, never left running.
    if let Ok(meta) = Meta::read(&out.join("meta.json")) {
        assert_ne!(meta.status, RunStatus::Running, "{meta:?}");
        assert!(meta.ended.is_some() && meta.error.is_some(), "{meta:?}");
    }
}
