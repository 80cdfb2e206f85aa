//! Helpers shared by the integration tests: run the real `collbench` binary, read the files of a
//! results folder, and (on Linux) find the rank processes of a launch through /proc.

#![allow(dead_code)] // each test file uses a different subset

pub mod accept;
pub mod imports;
pub mod launch;
pub mod load;
pub mod mpirun;
pub mod netlab;
mod procs;
pub mod protorun;
pub mod recorded;
pub mod skip;
pub mod slurm;
pub mod split;
pub mod svg;

#[allow(unused_imports)] // each test file uses a different subset, as above
pub use procs::*;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use collbench::meta::Meta;
use collbench::model::record::PointRecord;
use collbench::report::summary_csv::read_summary;

/// A sweep's default `--timeout`: a rank silent this long ends the run by itself.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A command's own limit plus 30 s: past it a test calls the command hung. Time limits in the
/// tests catch hangs only, never slowness (a loaded machine runs everything many times slower).
pub fn hang_limit(own: Duration) -> Duration {
    own + Duration::from_secs(30)
}

/// The binary under test.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_collbench")
}

/// Serialises the tests of one file that start rank processes: on a 2-core machine, two
/// launches at once make timing-based expectations (timeouts, hang detection) flaky.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What one finished command left behind.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// The exit code; panics (with the output) when the process died from a signal.
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal: {self:?}"))
    }

    /// The non-empty lines of stderr.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect()
    }
}

/// A `collbench` command with `args`, stdin closed and output captured.
pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(exe());
    // A test runner started by a cluster launcher must not turn every sweep into one rank of
    // a multi-host launch.
    for var in LAUNCHER_VARS {
        cmd.env_remove(var);
    }
    // nccl-tests' split, which a sweep reads where --split is not given.
    cmd.env_remove("NCCL_TESTS_SPLIT")
        .env_remove("NCCL_TESTS_SPLIT_MASK");
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// The variables by which collbench recognises mpirun, srun and torchrun.
pub const LAUNCHER_VARS: [&str; 8] = [
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "SLURM_PROCID",
    "SLURM_STEP_ID",
    "TORCHELASTIC_RUN_ID",
    "RANK",
    "WORLD_SIZE",
    "COLLBENCH_STORE_ADDR",
];

/// Reads a pipe to its end on a thread.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut text);
        }
        text
    })
}

/// A running `collbench` whose output is being collected.
pub struct Spawned {
    pub child: Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
}

impl Spawned {
    /// Starts `cmd` (built by [`command`]) and begins draining its output at once, so a chatty
    /// child never blocks on a full pipe.
    pub fn start(mut cmd: Command) -> Spawned {
        let mut child = cmd.spawn().expect("starting collbench");
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        Spawned { child, out, err }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits until it exits, at most `limit` counted from `since`, killing it if it runs over;
    /// `elapsed` in the result is counted from `since` too.
    pub fn finish(mut self, since: Instant, limit: Duration) -> Run {
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("waiting for collbench") {
                break s;
            }
            if since.elapsed() > limit {
                let _ = self.child.kill();
                let s = self.child.wait().expect("reaping collbench");
                let (o, e) = (self.out.join().unwrap(), self.err.join().unwrap());
                panic!("collbench ran over {limit:?} ({s}); stdout:\n{o}\nstderr:\n{e}");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let elapsed = since.elapsed();
        Run {
            status,
            stdout: self.out.join().unwrap(),
            stderr: self.err.join().unwrap(),
            elapsed,
        }
    }
}

/// Runs `collbench args...` to the end (killing it after `limit`).
pub fn run(args: &[&str], limit: Duration) -> Run {
    let started = Instant::now();
    Spawned::start(command(args)).finish(started, limit)
}

/// Runs `collbench <cmd> args...` to the end (killing it after `limit`).
pub fn run_cmd(cmd: &str, args: &[&str], limit: Duration) -> Run {
    let mut full = vec![cmd];
    full.extend_from_slice(args);
    run(&full, limit)
}

/// Runs `collbench fit RUN --output FIT` and insists that it succeeded.
pub fn fit_ok(run_dir: &Path, fit: &Path, limit: Duration) {
    let args = [
        "fit",
        run_dir.to_str().unwrap(),
        "--output",
        fit.to_str().unwrap(),
    ];
    let r = run(&args, limit);
    assert_eq!(r.code(), 0, "collbench {args:?} failed: {r:?}");
}

/// A JSON file collbench wrote, parsed (the test fails naming the file if it does not parse).
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `collbench project ARGS --out OUT`, insists that it succeeded, and reads its
/// projection.json.
pub fn project_ok(args: &[&str], out: &Path) -> (Run, serde_json::Value) {
    let out_arg = ["--out", out.to_str().unwrap()];
    let r = run_cmd(
        "project",
        &[args, &out_arg[..]].concat(),
        Duration::from_secs(300),
    );
    assert_eq!(r.code(), 0, "{r:?}");
    (r, read_json(&out.join("projection.json")))
}

/// The bundled h100-ib400 profile's fit.json, to add models or slowdowns to.
pub fn h100_profile() -> serde_json::Value {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/profiles/h100-ib400.json");
    read_json(&src)
}

/// Runs a sweep into `out` and insists that it succeeded.
pub fn sweep_ok(args: &[&str], out: &Path, limit: Duration) -> Run {
    let mut full = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
    full.extend_from_slice(args);
    let r = run(&full, limit);
    assert_eq!(r.code(), 0, "collbench {full:?} failed: {}", r.stderr);
    r
}

/// The rows of `dir/summary.csv`, read by the crate's own reader.
pub fn summary(dir: &Path) -> Vec<PointRecord> {
    read_summary(&dir.join("summary.csv")).expect("summary.csv reads back")
}

/// `dir/meta.json`, read by the crate's own reader.
pub fn meta(dir: &Path) -> Meta {
    Meta::read(&dir.join("meta.json")).expect("meta.json reads back")
}

/// Data rows of a CSV file as column name -> field maps (collbench never quotes fields).
pub fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(text.ends_with('\n'), "{} is cut off", path.display());
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header line").split(',').collect();
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{}: {line}", path.display());
            header
                .iter()
                .zip(fields)
                .map(|(h, f)| (h.to_string(), f.to_string()))
                .collect()
        })
        .collect()
}

/// Data rows of summary.csv counted without parsing them (a run may be writing the file).
pub fn summary_rows_on_disk(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("summary.csv"))
        .map(|t| t.matches('\n').count().saturating_sub(1))
        .unwrap_or(0)
}

/// The nccl-tests bytes `S` measured for a request: whole elements, per rank where the op
/// splits the buffer; 0 when not even one element fits. Written out here, not taken from the
/// crate, so that the crate's rounding is checked against an independent statement of it.
pub fn expected_bytes(op: &str, dtype: &str, requested: usize, world: usize) -> usize {
    let el = elem_size(dtype);
    match op {
        // nccl-tests (2.13.12 on) rounds these to whole 16-byte blocks per rank (AllToAll: per
        // peer block): `(count/nranks) & ~(16/eltSize - 1)`.
        "allgather" | "reducescatter" | "alltoall" | "gather" | "scatter" | "hypercube" => {
            let per = (requested / el / world) & !(16 / el - 1);
            per * world * el
        }
        _ => requested / el * el,
    }
}

/// Bytes per element of a dtype.
pub fn elem_size(dtype: &str) -> usize {
    match dtype {
        "f64" => 8,
        "f32" | "i32" => 4,
        "f16" | "bf16" => 2,
        other => panic!("unknown dtype {other}"),
    }
}

/// The nccl-tests bus-bandwidth factor, written out independently of the crate.
pub fn busbw_factor(op: &str, world: usize) -> f64 {
    let p = world as f64;
    match op {
        "allreduce" => 2.0 * (p - 1.0) / p,
        "allgather" | "reducescatter" | "alltoall" | "gather" | "scatter" => (p - 1.0) / p,
        "broadcast" | "reduce" | "sendrecv" => 1.0,
        other => panic!("unknown op {other}"),
    }
}

/// The sizes of `-b begin -e end -f factor`.
pub fn series(begin: usize, end: usize, factor: usize) -> Vec<usize> {
    let mut v = vec![begin];
    while v.last().unwrap() * factor <= end {
        v.push(v.last().unwrap() * factor);
    }
    v
}

/// Polls `cond` every 10 ms until it holds or `limit` passes; returns whether it held.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends `sig` to one process.
#[cfg(target_os = "linux")]
pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

/// The names in /dev/shm (empty where there is none).
pub fn dev_shm() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A fresh temporary folder; results go to `tmp.path().join("run")`.
pub fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().join("run");
    (tmp, out)
}
