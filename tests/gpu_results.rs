//! The committed H100 run (results/nccl-h100x1, scripts/gpu-check.sh on one H100 with NCCL
//! 2.28.9) read back here, where no GPU is: every folder reads with the crate's own readers and
//! holds no wrong element, and gpu-check's compare step, run on these folders, writes the
//! committed compare.csv again byte for byte (its awk program once lost its quoting on a GPU).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{hang_limit, meta, summary};

fn run_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results/nccl-h100x1")
}

/// The result folders of the run whose names start with `prefix`.
fn folders(prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(run_dir())
        .expect("results/nccl-h100x1 is committed")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("summary.csv").is_file())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            name.starts_with(prefix)
        })
        .collect();
    found.sort();
    found
}

#[test]
fn every_folder_of_the_h100_run_reads_back_exact() {
    let cb = folders("cb-");
    assert_eq!(cb.len(), 4, "{cb:?}");
    for dir in &cb {
        let m = meta(dir);
        assert_eq!(m.backend, "nccl", "{dir:?}");
        assert_eq!(m.library.as_deref(), Some("NCCL 2.28.9"), "{dir:?}");
        let rows = summary(dir);
        assert!(!rows.is_empty(), "{dir:?}");
        assert!(rows.iter().all(|r| r.wrong == 0), "{dir:?}");
    }
    // nccl-tests' logs and JSON, imported: as many folders of each, every row checked (-c 1).
    let (logs, json) = (folders("nt-"), folders("ntjson-"));
    assert_eq!(logs.len(), json.len());
    assert!(logs.len() >= 27, "{logs:?}");
    for dir in logs.iter().chain(&json) {
        let rows = summary(dir);
        assert!(
            !rows.is_empty() && rows.iter().all(|r| r.wrong == 0),
            "{dir:?}"
        );
    }
}

/// A copy of the run with its compressed samples.csv files unpacked (`xz -d`), as
/// results/README.md tells a reader to do.
fn unpacked_copy(into: &Path) -> PathBuf {
    let copy = into.join("nccl-h100x1");
    let status = Command::new("cp")
        .arg("-r")
        .arg(run_dir())
        .arg(&copy)
        .status()
        .expect("cp runs");
    assert!(status.success());
    for dir in folders("cb-") {
        let packed = copy.join(dir.file_name().unwrap()).join("samples.csv.xz");
        if packed.is_file() {
            let status = Command::new("xz").arg("-d").arg(&packed).status();
            assert!(
                status.map(|s| s.success()).unwrap_or(false),
                "xz -d {packed:?}"
            );
        }
    }
    copy
}

#[test]
fn gpu_check_compare_step_rewrites_the_committed_compare_csv() {
    if !common::skip::on_path("xz") {
        common::skip::skipped("no xz to unpack the run's samples.csv.xz (apt install xz-utils)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let run = unpacked_copy(tmp.path());
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let limit = hang_limit(Duration::from_secs(120)).as_secs().to_string();
    let out = Command::new("timeout")
        .args([limit.as_str(), "bash"])
        .arg(format!("{root}/scripts/gpu-check.sh"))
        .args(["--step", "compare"])
        .env("RES", &run)
        .env("WORK", &work)
        .env("CB", common::exe())
        .output()
        .expect("bash runs");
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    let said = said + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("median time ratio"), "{said}");
    // collbench's own compare of the stream sweep with nccl-tests' f32 AllReduce ran too.
    assert!(said.contains("points matched"), "{said}");
    let made = std::fs::read_to_string(work.join("compare.csv")).expect("compare.csv");
    let committed = std::fs::read_to_string(run_dir().join("compare.csv")).unwrap();
    assert_eq!(made.lines().count(), committed.lines().count());
    assert!(
        made == committed,
        "compare.csv differs from the committed one"
    );
}

#[test]
fn a_folder_whose_samples_are_packed_says_how_to_unpack_them() {
    let stream = run_dir().join("cb-stream");
    let nt = run_dir().join("nt-allreduce-f32-stream");
    let r = common::run(
        &["compare", stream.to_str().unwrap(), nt.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("samples.csv.xz is beside it"), "{r:?}");
    assert!(r.stderr.contains("xz -dk"), "{r:?}");
    assert_eq!(r.stderr.trim().lines().count(), 1, "{r:?}");
}
