//! scripts/gpu-check.sh rehearsed where no GPU is: the kit is made from this build
//! (scripts/gpu-kit.sh), the check runs from it, every GPU step says SKIPPED with its reason,
//! and it still writes its summary and archive, at most 8 files, and exits 0. On a GPU machine
//! the same script is the NCCL backend's first check (docs/GPU.md).

#![cfg(feature = "nccl")]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{hang_limit, Spawned};

#[test]
fn nccl_gpu_check_rehearses_here_saying_skipped_for_every_gpu_step() {
    if common::skip::on_path("nvidia-smi") {
        common::skip::skipped("a GPU driver is here: run scripts/gpu-check.sh for real instead");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (kit, out) = (tmp.path().join("kit"), tmp.path().join("out"));
    let root = env!("CARGO_MANIFEST_DIR");
    let made = Command::new("bash")
        .arg(format!("{root}/scripts/gpu-kit.sh"))
        .arg(&kit)
        .args(["--collbench", common::exe()])
        .output()
        .expect("bash runs");
    let said =
        String::from_utf8_lossy(&made.stdout).to_string() + &String::from_utf8_lossy(&made.stderr);
    assert!(made.status.success(), "gpu-kit.sh: {said}");
    assert!(kit.join("MANIFEST.txt").is_file(), "{said}");
    let mut check = Command::new("bash");
    check
        .arg(format!("{root}/scripts/gpu-check.sh"))
        .arg(&out)
        .env("GPU_KIT", &kit)
        .env("GPU_CHECK_BUDGET", "240");
    let r = Spawned::start(check).finish(
        std::time::Instant::now(),
        hang_limit(Duration::from_secs(420)),
    );
    assert_eq!(r.code(), 0, "{r:?}");
    let files: Vec<_> = std::fs::read_dir(&out).unwrap().flatten().collect();
    assert!(!files.is_empty() && files.len() <= 8, "{files:?}");
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("summary.txt");
    assert!(summary.contains("SKIPPED"), "{summary}");
    assert!(!summary.contains("FAIL"), "{summary}");
    assert!(out.join("gpu-check.tar.gz").is_file(), "{files:?}");
}
