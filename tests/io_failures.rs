//! Output that cannot be written: a closed stdout (EPIPE) ends quietly with the command's own
//! exit code, a full stdout (/dev/full) is one line and exit 2, never a panic; a disk that fills
//! during a sweep leaves a finalised meta.json, no half or temporary files, and a folder the
//! readers take up to its last complete point; a malformed telemetry.csv beside it is refused by
//! every command that reads the folder.

mod common;

use std::fs;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::recorded::Recorded;
use common::{command, run, serial, Run, Spawned};

const LIMIT: Duration = Duration::from_secs(120);

/// One real sweep shared by the tests.
fn recorded() -> &'static Path {
    static RUN: Recorded = Recorded::new();
    RUN.dir(
        &["--ranks", "2", "-b", "1K", "-e", "64K", "--iters", "20"],
        LIMIT,
    )
}

/// The write end of a pipe whose read end is already closed: every write fails with EPIPE.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two new descriptors; each is owned exactly once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    drop(unsafe { OwnedFd::from_raw_fd(fds[0]) });
    Stdio::from(unsafe { OwnedFd::from_raw_fd(fds[1]) })
}

fn run_with_stdout(args: &[&str], stdout: Stdio, dir: &Path) -> Run {
    let mut cmd = command(args);
    cmd.stdout(stdout).current_dir(dir);
    Spawned::start(cmd).finish(Instant::now(), LIMIT)
}

/// Commands that print to stdout, with the exit code each has when stdout is fine; `tag` keeps
/// the sweep's folder apart from other calls'.
fn printing_commands(run_dir: &str, tmp: &Path, tag: &str) -> Vec<(Vec<String>, i32)> {
    let fit = tmp.join("fit.json").to_str().unwrap().to_string();
    let sweep_out = tmp
        .join(format!("sweep-{tag}"))
        .to_str()
        .unwrap()
        .to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["backends"],
        vec!["backends", "--json"],
        vec!["compare", run_dir, run_dir],
        vec!["compare", run_dir, run_dir, "--json"],
        vec!["fit", run_dir, "-o", &fit, "--force"],
        vec!["project", "--profile", "a100-ib200", "--model", "llama2-7b"],
        vec![
            "sweep",
            "--no-progress",
            "--ranks",
            "2",
            "-b",
            "8",
            "-e",
            "64",
            "--iters",
            "2",
            "--out",
            &sweep_out,
        ],
    ];
    commands
        .into_iter()
        .map(|c| (c.into_iter().map(String::from).collect(), 0))
        .collect()
}

#[test]
fn a_closed_stdout_ends_quietly() {
    // recorded() takes the lock itself the first time.
    let run_dir = recorded().to_str().unwrap();
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    for (args, code) in printing_commands(run_dir, tmp.path(), "closed") {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run_with_stdout(&args, closed_pipe(), tmp.path());
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
        assert_eq!(r.code(), code, "{args:?}: {r:?}");
        assert!(
            !r.stderr.contains("standard output"),
            "{args:?}: {}",
            r.stderr
        );
    }
}

#[test]
fn a_full_stdout_is_one_line_and_exit_2() {
    // recorded() takes the lock itself the first time.
    let run_dir = recorded().to_str().unwrap();
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    for (args, _) in printing_commands(run_dir, tmp.path(), "full") {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let full = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let r = run_with_stdout(&args, Stdio::from(full), tmp.path());
        assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
        assert_eq!(r.code(), 2, "{args:?}: {r:?}");
        let bad: Vec<&str> = r
            .stderr_lines()
            .into_iter()
            .filter(|l| l.contains("standard output"))
            .collect();
        assert_eq!(bad.len(), 1, "{args:?}: {}", r.stderr);
        assert!(bad[0].contains("No space left"), "{}", bad[0]);
    }
}

/// A tmpfs of `size` mounted at a new folder; unmounted on drop.
struct SmallDisk {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

impl SmallDisk {
    /// The mounted disk, or `None` after a visible SKIPPED (a failure where `tmpfs` is
    /// required).
    fn mount(size: &str) -> Option<SmallDisk> {
        let disk = Self::try_mount(size);
        let missing = disk
            .is_none()
            .then(|| "needs root to mount a small tmpfs".to_string());
        common::skip::can_use("tmpfs", missing)
            .then_some(disk)
            .flatten()
    }

    fn try_mount(size: &str) -> Option<SmallDisk> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("disk");
        fs::create_dir(&path).unwrap();
        let opt = format!("size={size}");
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &opt, "tmpfs", path.to_str().unwrap()])
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk { _tmp: tmp, path })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.path)
            .status();
    }
}

#[test]
fn a_disk_that_fills_during_a_sweep_leaves_a_readable_folder() {
    let _guard = serial();
    let Some(disk) = SmallDisk::mount("160k") else {
        return;
    };
    let out = disk.path.join("run");
    let o = out.to_str().unwrap();
    // About 50 KB of samples per point: the disk fills after two or three of the 14 points.
    let args = [
        "sweep",
        "--no-progress",
        "--ranks",
        "2",
        "-b",
        "8",
        "-e",
        "64K",
        "--iters",
        "1000",
        "--warmup",
        "1",
        "--out",
        o,
    ];
    let r = run(&args, LIMIT);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    assert_eq!(r.code(), 2, "{r:?}");
    let last = r
        .stderr_lines()
        .last()
        .copied()
        .unwrap_or_default()
        .to_string();
    assert!(last.contains("No space left"), "{}", r.stderr);
    assert!(
        !last.contains("meta.json"),
        "names meta.json, not the failed file: {last}"
    );
    assert!(last.contains(".csv"), "{last}");
    let meta = common::meta(&out);
    assert_eq!(format!("{:?}", meta.status), "Failed", "{meta:?}");
    for e in fs::read_dir(&out).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(!name.contains("tmp"), "left behind: {name}");
        assert!(e.metadata().unwrap().len() > 0, "empty: {name}");
        let text = fs::read_to_string(e.path()).unwrap();
        assert!(text.ends_with('\n'), "{name} ends in half a line");
    }
    let points = common::summary_rows_on_disk(&out);
    assert!(points >= 1, "no point fitted on the disk; raise its size");
    let r = run(&["compare", o, o], LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stdout.lines().count() >= points, "{}", r.stdout);
}

#[test]
fn a_killed_run_cut_mid_line_is_read_up_to_its_last_complete_point() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("killed");
    fs::create_dir(&dir).unwrap();
    for f in ["summary.csv", "samples.csv", "ranks.csv"] {
        fs::copy(recorded().join(f), dir.join(f)).unwrap();
    }
    let meta = fs::read_to_string(recorded().join("meta.json")).unwrap();
    fs::write(
        dir.join("meta.json"),
        meta.replace("\"complete\"", "\"running\""),
    )
    .unwrap();
    let summary = fs::read_to_string(dir.join("summary.csv")).unwrap();
    let points = summary.lines().count() - 1;
    // The crash came while writing the last summary row and the samples after it.
    fs::write(dir.join("summary.csv"), &summary[..summary.len() - 5]).unwrap();
    let samples = fs::read_to_string(dir.join("samples.csv")).unwrap();
    fs::write(
        dir.join("samples.csv"),
        format!("{samples}{},allre", points - 1),
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    let fit = tmp.path().join("fit.json");
    for args in [
        vec!["fit", d, "-o", fit.to_str().unwrap()],
        vec!["compare", d, d],
        vec!["plot", d, "--format", "svg"],
        vec!["report", d],
    ] {
        let r = run(&args, LIMIT);
        assert_eq!(r.code(), 0, "{args:?}: {r:?}");
        let warnings = r
            .stderr_lines()
            .into_iter()
            .filter(|l| l.contains("warning"));
        let text: Vec<&str> = warnings.collect();
        assert!(
            text.iter().any(|l| l.contains("running") && l.contains(d)),
            "{args:?}: {text:?}"
        );
        assert!(
            text.iter().any(|l| l.contains("cut off")),
            "{args:?}: {text:?}"
        );
    }
    let fitted: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&fit).unwrap()).unwrap();
    assert!(fitted["curves"].as_array().is_some_and(|c| !c.is_empty()));
}

#[test]
fn a_malformed_telemetry_csv_is_refused_by_every_reader() {
    use collbench::report::telemetry_csv::TELEMETRY_COLUMNS;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("telemetry");
    fs::create_dir(&dir).unwrap();
    for f in ["meta.json", "summary.csv", "samples.csv", "ranks.csv"] {
        fs::copy(recorded().join(f), dir.join(f)).unwrap();
    }
    let fields: Vec<&str> = TELEMETRY_COLUMNS
        .iter()
        .map(|c| match *c {
            "point" | "rank" | "samples" => "1",
            "power_w_mean" => "lots",
            _ => "",
        })
        .collect();
    let text = format!("{}\n{}\n", TELEMETRY_COLUMNS.join(","), fields.join(","));
    fs::write(dir.join("telemetry.csv"), text).unwrap();
    let criteria = tmp.path().join("c.toml");
    fs::write(
        &criteria,
        "name = \"t\"\n[[criterion]]\nname = \"c\"\nmax_wrong = 0\n",
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    let fit = tmp.path().join("fit.json");
    // Every command reads the folder through one reader, so each refuses the file, not only
    // the fit that takes the run's power from it.
    for args in [
        vec!["fit", d, "-o", fit.to_str().unwrap()],
        vec!["compare", d, d],
        vec!["plot", d, "--format", "svg"],
        vec!["report", d],
        vec![
            "accept",
            "--criteria",
            criteria.to_str().unwrap(),
            "--run",
            d,
        ],
    ] {
        let r = run(&args, LIMIT);
        assert_eq!(r.code(), 2, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains("telemetry.csv") && r.stderr.contains("line 2"),
            "{args:?}: {}",
            r.stderr
        );
    }
}

#[test]
fn an_import_onto_a_full_disk_leaves_no_folder_behind() {
    let _guard = serial();
    let Some(disk) = SmallDisk::mount("16k") else {
        return;
    };
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/import/nccl-tests/all_gather_2019_g12_noredop_column.log"
    );
    let out = disk.path.join("imported");
    let r = run(
        &["import", "nccl-tests", log, "--out", out.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("No space left"), "{}", r.stderr);
    // No half folder, no 0-byte summary.csv, no meta.json saying running, no staging folder.
    let left: Vec<String> = fs::read_dir(&disk.path)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
