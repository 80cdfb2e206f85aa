//! Every reduction in every type on a real GPU. `#[ignore]`d like the rest of tests/nccl/gpu.rs.

use super::common::summary;
use super::common::sweep_ok;
use super::gpu::{gpus_or_skip, GPU_LIMIT};
use collbench::collective::{DType, Op};
use collbench::model::call::BackendKind;

/// Every reduction NCCL runs (`--redop all`: sum, prod, max, min, avg, and mulsum through
/// `ncclRedOpCreatePreMulSum`) over the reducing ops in every type the library has (fp8 from
/// NCCL 2.24.3, whose fp8 kernels need compute capability 9.0: the H100 and H200 of the GPU
/// check have it): every point exact, every (dtype, reduction) pair measured.
#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_every_reduction_is_exact_in_every_type() {
    let Some(gpus) = gpus_or_skip() else {
        return;
    };
    let nccl = collbench::backend::nccl::loader::Nccl::load().expect("libnccl");
    let version = nccl.version().expect("its version");
    let runs = |d: &DType| collbench::backend::nccl::map::check_dtype(*d, version).is_ok();
    let dtypes: Vec<DType> = DType::ALL.iter().copied().filter(runs).collect();
    let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let list = names.join(",");
    #[rustfmt::skip]
    let args = [
        "--backend", "nccl", "--op", "allreduce,reducescatter,reduce", "--dtype", &list,
        "--redop", "all", "--in-place", "both", "-b", "64", "-e", "1M", "-f", "16",
        "--iters", "3", "--warmup", "1",
    ];
    let said = sweep_ok(&args, &dir, GPU_LIMIT).stderr;
    let rows = summary(&dir);
    let bad: Vec<_> = rows
        .iter()
        .filter(|r| r.wrong != 0)
        .map(|r| &r.key)
        .collect();
    assert!(bad.is_empty(), "wrong results: {bad:?}");
    let measured: std::collections::BTreeSet<_> =
        rows.iter().map(|r| (r.key.dtype, r.key.redop)).collect();
    // One GPU: world 1, where NCCL refuses fp8 avg and mulsum (BackendKind::refuses_at); the
    // sweep leaves them out and says so.
    let refused = |d: DType, r| {
        gpus == 1
            && BackendKind::Nccl
                .refuses_at(Op::AllReduce, d, r, 1)
                .is_some()
    };
    for d in &dtypes {
        for r in collbench::collective::ReduceOp::ALL {
            let want = !refused(*d, *r);
            assert_eq!(measured.contains(&(*d, *r)), want, "{d} {r}");
        }
    }
    if dtypes
        .iter()
        .any(|d| refused(*d, collbench::collective::ReduceOp::Avg))
    {
        assert!(
            said.contains("avg at world 1: NCCL's single-rank path"),
            "{said}"
        );
    }
}
