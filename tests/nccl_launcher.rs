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
use common::{command, hang_limit, marked, marker, Run, Spawned, MARKER_ENV, RUN_TIMEOUT};

/// The pip NCCL, or `None` after saying SKIPPED.
fn pip_nccl_or_skip() -> bool {
    let sites = search::python_site_dirs();
    let lib = search::pip_libraries(&sites).into_iter().next();
    let missing = lib
        .is_none()
        .then(|| format!("no pip NCCL: {}", search::describe_sites(&sites)));
    common::skip::can_use("libnccl", missing)
}

/// A bootstrap rehearsal of 6 ranks into `out`, in a process group of its own, marked `mark`.
fn start(out: &std::path::Path, mark: &str) -> Spawned {
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
    cmd.arg("--out").arg(out);
    cmd.env("COLLBENCH_NCCL_BOOTSTRAP_ONLY", "1")
        .env(MARKER_ENV, mark)
        // Found by each rank through python3, as a PyTorch user's NCCL is: the ranks live long
        // enough that a signal usually lands while they run (either way the checks hold).
        .env_remove("COLLBENCH_NCCL_LIB");
    cmd.process_group(0);
    Spawned::start(cmd)
}

/// The pids of the launch's rank processes (those the launcher gave a rank).
fn rank_pids(mark: &str) -> Vec<u32> {
    let is_rank = |pid: u32| {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        env.split(|&b| b == 0)
            .any(|v| v.starts_with(b"COLLBENCH_NCCL_RANK="))
    };
    marked(mark)
        .into_iter()
        .map(|p| p.pid)
        .filter(|&p| is_rank(p))
        .collect()
}

/// Waits until a rank runs or the launch has ended by itself; the ranks then running.
fn wait_for_ranks(launch: &mut Spawned, mark: &str, started: Instant) -> Vec<u32> {
    loop {
        let ranks = rank_pids(mark);
        if !ranks.is_empty() || launch.child.try_wait().unwrap().is_some() {
            return ranks;
        }
        assert!(
            started.elapsed() < hang_limit(RUN_TIMEOUT),
            "no rank started"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Every process of the launch ends (ranks and what they started), and a results folder that
/// exists is closed, never left running.
fn assert_nothing_left(mark: &str, out: &std::path::Path) {
    let ended = Instant::now();
    while !marked(mark).is_empty() {
        let left = marked(mark);
        assert!(
            ended.elapsed() < hang_limit(RUN_TIMEOUT),
            "left behind: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Ok(meta) = Meta::read(&out.join("meta.json")) {
        assert_ne!(meta.status, RunStatus::Running, "{meta:?}");
        assert!(meta.ended.is_some() && meta.error.is_some(), "{meta:?}");
    }
}

/// A rehearsal launched and hit by `signal` (given the launcher's pid and the ranks running)
/// once a rank runs or the launch has ended; its outcome after every process of it is gone.
fn launch_and_signal(signal: impl FnOnce(libc::pid_t, &[u32])) -> Run {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let (out, mark) = (tmp.path().join("run"), marker());
    let started = Instant::now();
    let mut launch = start(&out, &mark);
    let launcher = launch.child.id() as libc::pid_t;
    let ranks = wait_for_ranks(&mut launch, &mark, started);
    signal(launcher, &ranks);
    let r = launch.finish(started, hang_limit(RUN_TIMEOUT));
    assert_nothing_left(&mark, &out);
    r
}

#[test]
fn nccl_ctrl_c_to_the_launch_at_any_moment_leaves_no_rank_and_no_running_folder() {
    if !pip_nccl_or_skip() {
        return;
    }
    // SAFETY: kill(2) to the process group this test made for the launcher.
    let r = launch_and_signal(|launcher, _| unsafe {
        libc::kill(-launcher, libc::SIGINT);
    });
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "one line: {r:?}");
    match r.code() {
        130 => assert!(lines[0].starts_with("collbench: interrupted"), "{r:?}"),
        // The bootstrap had already failed (no GPU) when the signal came.
        2 => assert!(lines[0].contains("ncclCommInitRank"), "{r:?}"),
        other => panic!("exit {other}: {r:?}"),
    }
}

#[test]
fn nccl_a_killed_rank_ends_the_launch_in_one_line_naming_a_rank() {
    if !pip_nccl_or_skip() {
        return;
    }
    let r = launch_and_signal(|_, ranks| {
        if let Some(&victim) = ranks.last() {
            // SAFETY: kill(2) to a rank process of this test's launch.
            unsafe { libc::kill(victim as libc::pid_t, libc::SIGKILL) };
        }
    });
    assert_eq!(r.code(), 2, "{r:?}");
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "one line: {r:?}");
    // The killed rank is named, or (the kill came after the bootstrap had failed, or the dead
    // rank's peers failed first) the rank whose failure ended the launch.
    assert!(lines[0].starts_with("collbench: nccl rank "), "{r:?}");
    assert!(
        lines[0].contains("signal 9 (SIGKILL)") || lines[0].contains("exit code 2: "),
        "{r:?}"
    );
}
