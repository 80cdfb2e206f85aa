//! `--with-compute gemm` on real GPUs: every point measured alone and again beside cuBLAS BF16
//! GEMMs on a second stream, both slowdowns recorded, the calls still exact. `#[ignore]`d as
//! the other GPU tests; SKIPPED where nccl cannot run.

use super::common::summary;
use super::gpu::{gpus_or_skip, sweep_dir};

#[test]
#[ignore = "needs NVIDIA GPUs, their driver, libnccl and libcublas"]
fn gpu_calls_beside_gemms_record_both_slowdowns_and_stay_exact() {
    let Some(gpus) = gpus_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce,reducescatter",
        "--dtype",
        "bf16",
        "--with-compute",
        "gemm",
        "-b",
        "1M",
        "-e",
        "64M",
        "-f",
        "8",
        "--iters",
        "10",
        "--warmup",
        "3",
    ];
    sweep_dir(&args, &dir);
    let rows = summary(&dir);
    let (alone, beside): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r.key.concurrent.is_none());
    // 1M, 8M and 64M for each op, alone and beside the GEMMs.
    assert_eq!((alone.len(), beside.len()), (6, 6), "{rows:?}");
    for r in &rows {
        assert_eq!(r.wrong, 0, "{:?}", r.key);
        assert_eq!(r.key.world, gpus);
    }
    for r in &beside {
        assert_eq!(r.key.concurrent.as_deref(), Some("compute gemm"));
        let call = r
            .slowdown
            .expect("the call's slowdown against its point alone");
        let gemm = r
            .compute_slowdown
            .expect("the GEMMs' slowdown against alone");
        // Ratios of two positive times; sharing one GPU slows neither by 1000x.
        for s in [call, gemm] {
            assert!(s.is_finite() && s > 0.0 && s < 1000.0, "{r:?}");
        }
    }
}
