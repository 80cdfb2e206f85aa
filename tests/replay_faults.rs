//! Faults during `collbench project --replay`, with real rank processes and real signals: a
//! stopped rank is found by the watchdog and named within its timeout; Ctrl-C or SIGTERM ends
//! the replay with an `interrupted` line, exit 130 and the steps measured so far in replay.csv.
//! In every case no process of the replay is left behind.

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{
    command, csv_rows, marked, proc_info, ranks_of, run, serial, signal, sweep_ok, wait_until,
    Proc, Spawned, MARKER_ENV,
};

const LIMIT: Duration = Duration::from_secs(300);
const MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/bench-configs/models/tiny-replay.toml"
);
const HARDWARE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/bench-configs/hardware/host-replay.toml"
);

/// A fit of the collectives the tiny model's replay runs, measured once on this machine.
fn fit() -> &'static Path {
    static FIT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, fit) = FIT.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        let sweep = [
            "--op",
            "allgather,reducescatter",
            "--dtype",
            "bf16",
            "--ranks",
            "4",
            "--world-sizes",
            "2,4",
            "-b",
            "128K",
            "-e",
            "4M",
            "--iters",
            "10",
            "--warmup",
            "2",
        ];
        sweep_ok(&sweep, &out, LIMIT);
        let fit = tmp.path().join("fit.json");
        let args = [
            "fit",
            out.to_str().unwrap(),
            "--output",
            fit.to_str().unwrap(),
        ];
        let r = run(&args, LIMIT);
        assert_eq!(r.code(), 0, "{r:?}");
        (tmp, fit)
    });
    fit
}

/// A long replay (many more steps than a test waits for) on two ranks, writing into `out`.
struct Replay {
    run: Option<Spawned>,
    marker: String,
}

impl Replay {
    fn start(out: &Path, extra: &[&str], own_group: bool) -> Replay {
        let fit = fit().to_str().unwrap();
        let mut args = vec![
            "project",
            "--fit",
            fit,
            "--model",
            MODEL,
            "--hardware",
            HARDWARE,
            "--world-sizes",
            "2",
            "--replay",
            "--replay-steps",
            "100000",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let marker = common::marker();
        let mut cmd = command(&args);
        cmd.env(MARKER_ENV, &marker);
        if own_group {
            cmd.process_group(0);
        }
        Replay {
            run: Some(Spawned::start(cmd)),
            marker,
        }
    }

    fn pid(&self) -> u32 {
        self.run.as_ref().unwrap().pid()
    }

    /// Waits until both rank processes are up, then a little longer so that steps complete.
    fn ranks_running(&mut self) -> Vec<Proc> {
        let pid = self.pid();
        let up = wait_until(Duration::from_secs(60), || ranks_of(pid).len() == 2);
        assert!(
            up && self.run.as_mut().unwrap().running(),
            "the replay did not start"
        );
        std::thread::sleep(Duration::from_secs(1));
        ranks_of(pid)
    }

    fn finish(&mut self, since: Instant) -> common::Run {
        self.run
            .take()
            .unwrap()
            .finish(since, common::hang_limit(Duration::from_secs(60)))
    }

    /// No process of this replay is alive.
    fn assert_clean(&self, ranks: &[Proc]) {
        for p in ranks {
            assert_eq!(proc_info(p.pid).filter(Proc::is_alive), None, "{p:?}");
        }
        let left = marked(&self.marker);
        assert!(left.is_empty(), "processes left behind: {left:?}");
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        for p in marked(&self.marker) {
            // SAFETY: kill(2) on processes this test started (they carry its marker).
            unsafe {
                libc::kill(p.pid as libc::pid_t, libc::SIGKILL);
                libc::kill(p.pid as libc::pid_t, libc::SIGCONT);
            }
        }
        if let Some(mut r) = self.run.take() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

/// The one stderr line that starts with `start`.
fn line_starting<'a>(r: &'a common::Run, start: &str) -> &'a str {
    let found: Vec<&str> = r
        .stderr_lines()
        .into_iter()
        .filter(|l| l.starts_with(start))
        .collect();
    assert_eq!(found.len(), 1, "no single '{start}' line: {}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    found[0]
}

/// The `N of M replay step(s) measured` count of a line, and replay.csv holding exactly N rows.
fn kept_steps_match(line: &str, out: &Path) {
    let (before, _) = line
        .split_once(" of 100000 replay step(s) measured, written to ")
        .unwrap_or_else(|| panic!("no count of the steps kept: {line}"));
    let n: usize = before.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(csv_rows(&out.join("replay.csv")).len(), n, "{line}");
    assert!(out.join("projection.csv").is_file());
}

#[test]
fn a_stopped_replay_rank_is_named_within_its_timeout() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("proj");
    let mut replay = Replay::start(&out, &["--replay-timeout", "2s"], false);
    let ranks = replay.ranks_running();
    signal(ranks[1].pid, libc::SIGSTOP);
    let t0 = Instant::now();
    let r = replay.finish(t0);
    assert_eq!(r.code(), 2, "{r:?}");
    // How soon is not asserted: `finish`'s hang limit catches a watchdog that never fires.
    let want = format!(
        "collbench: replay rank 1 (pid {}) finished no step for ",
        ranks[1].pid
    );
    let line = line_starting(&r, &want);
    assert!(
        line.contains("(process is stopped); all ranks were stopped"),
        "{line}"
    );
    kept_steps_match(line, &out);
    replay.assert_clean(&ranks);
}

/// Sends `sig` to the launcher alone, or to its process group as a terminal's Ctrl-C does.
fn interrupt(sig: i32, group: bool) {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("proj");
    let mut replay = Replay::start(&out, &[], group);
    let ranks = replay.ranks_running();
    if group {
        // SAFETY: kill(2) to the process group this test created for the launcher.
        assert_eq!(
            unsafe { libc::kill(-(replay.pid() as libc::pid_t), sig) },
            0
        );
    } else {
        signal(replay.pid(), sig);
    }
    let r = replay.finish(Instant::now());
    assert_eq!(r.code(), 130, "{r:?}");
    let line = line_starting(&r, "collbench: interrupted; ");
    kept_steps_match(line, &out);
    replay.assert_clean(&ranks);
}

#[test]
fn ctrl_c_to_the_process_group_stops_a_replay_and_keeps_its_steps() {
    interrupt(libc::SIGINT, true);
}

#[test]
fn sigterm_to_the_launcher_stops_a_replay_and_keeps_its_steps() {
    interrupt(libc::SIGTERM, false);
}
