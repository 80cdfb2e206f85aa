//! The MPI backend when a rank fails: a stopped rank ends the run within --timeout, named by
//! rank 0 and recorded in meta.json; a command line every rank refuses is said once. Needs
//! Open MPI's `mpirun` (cargo feature `mpi`).

#![cfg(feature = "mpi")]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{exe, tempdir, Spawned};

const LIMIT: Duration = Duration::from_secs(240);

/// The pid of world rank `rank` of the collbench ranks writing to `out`.
fn rank_pid(out: &Path, rank: usize) -> Option<u32> {
    let want = format!("OMPI_COMM_WORLD_RANK={rank}");
    let out = out.to_string_lossy().to_string();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
        let cmdline = String::from_utf8_lossy(&cmdline);
        let environ = std::fs::read(e.path().join("environ")).ok()?;
        let ours = cmdline.starts_with(exe()) && cmdline.contains(&out);
        let is_rank = environ.split(|&b| b == 0).any(|v| v == want.as_bytes());
        (ours && is_rank).then_some(pid)
    })
}

#[test]
fn a_stopped_rank_ends_the_run_within_its_timeout_naming_the_rank() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let (_tmp, out) = tempdir();
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "3", exe()])
        .args([
            "sweep",
            "--backend",
            "mpi",
            "--no-progress",
            "--op",
            "allreduce",
        ])
        .args([
            "-b",
            "1K",
            "-e",
            "1M",
            "--iters",
            "1000000",
            "--timeout",
            "5s",
            "--out",
        ])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let run = Spawned::start(cmd);
    let started = common::wait_until(LIMIT, || {
        out.join("meta.json").is_file() && rank_pid(&out, 1).is_some()
    });
    assert!(started, "the run did not start");
    let victim = rank_pid(&out, 1).unwrap();
    common::signal(victim, libc::SIGSTOP);
    let stopped_at = Instant::now();
    // 5 s of --timeout plus a margin for mpirun to end the job: a hang limit, not a speed.
    let r = run.finish(stopped_at, common::hang_limit(Duration::from_secs(60)));
    // SAFETY: kill(2) of the rank this test stopped, should mpirun have left it.
    unsafe {
        libc::kill(victim as i32, libc::SIGKILL);
    }
    assert!(!r.status.success(), "{r:?}");
    let named = format!("rank 1 (pid {victim}) is stopped");
    assert!(r.stderr.contains(&named), "{}", r.stderr);
    assert!(r.stderr.contains("no progress for 5s"), "{}", r.stderr);
    let m = common::meta(&out);
    assert_eq!(m.status, collbench::meta::RunStatus::Failed, "{m:?}");
    assert!(m.error.unwrap_or_default().contains(&named));
    let rows = common::summary(&out);
    assert_eq!(
        m.points,
        rows.len(),
        "every point meta.json counts is on disk"
    );
}

#[test]
fn a_command_line_every_rank_refuses_is_said_once() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "3", exe()])
        .args(["sweep", "--backend", "mpi", "--bogus-flag"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let r = Spawned::start(cmd).finish(Instant::now(), common::hang_limit(LIMIT));
    assert!(!r.status.success(), "{r:?}");
    let said = r
        .stderr
        .matches("unexpected argument '--bogus-flag'")
        .count();
    assert_eq!(said, 1, "{}", r.stderr);
}

#[test]
fn a_launcher_variable_every_rank_lacks_is_said_once() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "3"])
        .args(["-x", "COLLBENCH_STORE_ADDR=127.0.0.1:9", exe()])
        .args(["sweep", "-b", "8", "-e", "8"])
        .env_remove("COLLBENCH_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let r = Spawned::start(cmd).finish(Instant::now(), common::hang_limit(LIMIT));
    assert!(!r.status.success(), "{r:?}");
    let said = r.stderr.matches("COLLBENCH_TOKEN is not set").count();
    assert_eq!(said, 1, "{}", r.stderr);
}
