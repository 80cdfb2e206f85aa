//! Sweeps on real GPUs, NCCL's own choices: forced algorithms and protocols (and what NCCL
//! ran, from its profiler), and CUDA-graph mode. `#[ignore]`d like the rest of tests/nccl/gpu.rs.

use super::common::{meta, summary};
use super::gpu::{gpus_or_skip, sweep_dir};
use collbench::collective::{Algo, Proto};

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_forced_algorithms_and_protocols_are_recorded_per_point() {
    if gpus_or_skip().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce",
        "--algo",
        "ring,tree",
        "--proto",
        "ll,simple",
        "-b",
        "1K",
        "-e",
        "1M",
        "-f",
        "32",
        "--iters",
        "5",
    ];
    sweep_dir(&args, &dir);
    let rows = summary(&dir);
    for algo in [Algo::Ring, Algo::Tree] {
        for proto in [Proto::Ll, Proto::Simple] {
            let n = rows
                .iter()
                .filter(|r| r.key.algo == algo && r.key.proto == Some(proto))
                .count();
            // 1K, 32K, 1M.
            assert_eq!(n, 3, "{algo} {proto}");
        }
    }
    assert!(rows.iter().all(|r| r.wrong == 0));
    let text = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.contains(",proto,nccl_estimate_us"), "{header}");
    // What NCCL ran, from its profiler (2.23+; one rank runs no algorithm at all): the forced
    // algorithm and protocol, each point.
    let nccl = collbench::backend::nccl::loader::Nccl::load().expect("libnccl");
    let v = nccl.version().unwrap();
    for r in rows
        .iter()
        .filter(|r| r.key.world > 1 && (v.major, v.minor) >= (2, 23))
    {
        let ran = (r.nccl_algo.as_deref(), r.nccl_proto.as_deref());
        let want = (r.key.algo.to_string(), r.key.proto.unwrap().to_string());
        assert_eq!(ran, (Some(want.0.as_str()), Some(want.1.as_str())), "{r:?}");
    }
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_cuda_graph_mode_is_exact_and_recorded() {
    if gpus_or_skip().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--cuda-graph",
        "--op",
        "allreduce,allgather,reducescatter,broadcast,reduce",
        "--dtype",
        "bf16,i32",
        "--in-place",
        "both",
        "-b",
        "64",
        "-e",
        "1M",
        "-f",
        "128",
        "--iters",
        "10",
        "--warmup",
        "2",
    ];
    sweep_dir(&args, &dir);
    let rows = summary(&dir);
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r.wrong, 0, "{:?}", r.key);
        assert!(r.time_us_median > 0.0, "{r:?}");
    }
    let m = meta(&dir);
    assert_eq!(m.options["cuda_graph"], true, "{:?}", m.options);
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_local_registration_is_exact_and_recorded() {
    if gpus_or_skip().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce,allgather,reducescatter,alltoall",
        "--register",
        "local",
        "-b",
        "1K",
        "-e",
        "4M",
        "-f",
        "64",
        "--iters",
        "5",
    ];
    sweep_dir(&args, &dir);
    let rows = summary(&dir);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r.wrong == 0), "{rows:?}");
    assert_eq!(meta(&dir).options["register"], "local");
}
