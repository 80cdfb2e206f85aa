//! Sweeps on real GPUs. Each test is `#[ignore]`d (no GPU in CI) and, when run with
//! `--ignored`, prints SKIPPED and passes where `collbench backends` says nccl cannot run here.

use std::path::Path;
use std::time::Duration;

use super::common::{meta, run, summary, sweep_ok};
use collbench::collective::{Algo, DType, Op, Proto};

pub(super) const GPU_LIMIT: Duration = Duration::from_secs(600);

/// The GPUs this machine offers NCCL, or `None` (after printing SKIPPED) where it cannot run.
pub(super) fn gpus_or_skip() -> Option<usize> {
    let r = run(&["backends", "--json"], Duration::from_secs(60));
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let row = &v["backends"][2];
    let detail = row["detail"].as_str().unwrap_or("").to_string();
    if !super::common::skip::can_use("gpu", (row["runs"] != true).then(|| detail.clone())) {
        return None;
    }
    // "ready: 8 GPU(s) (driver for CUDA 12.4, ...)".
    let count = detail
        .trim_start_matches("ready: ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the detail starts with the GPU count");
    Some(count)
}

pub(super) fn sweep_dir(args: &[&str], dir: &Path) {
    sweep_ok(args, dir, GPU_LIMIT);
}

/// The dtypes of [`gpu_every_op_and_dtype_in_and_out_of_place_is_exact`]; the others run in
/// [`gpu_every_reduction_is_exact_in_every_type`].
const GPU_DTYPES: &str = "f32,f16,bf16,f64,i32";

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_every_op_and_dtype_in_and_out_of_place_is_exact() {
    let Some(gpus) = gpus_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv,gather,scatter",
        "--dtype",
        GPU_DTYPES,
        "--in-place",
        "both",
        "-b",
        "64",
        "-e",
        "4M",
        "-f",
        "16",
        "--iters",
        "5",
        "--warmup",
        "2",
    ];
    let started = std::time::Instant::now();
    sweep_dir(&args, &dir);
    let wall_s = started.elapsed().as_secs_f64();
    let rows = summary(&dir);
    assert!(!rows.is_empty());
    let nccl = collbench::backend::nccl::loader::Nccl::load().expect("libnccl");
    for r in &rows {
        assert_eq!(r.wrong, 0, "{:?}", r.key);
        assert_eq!(r.key.backend, "nccl");
        assert_eq!((r.key.algo, r.key.proto), (Algo::Auto, Some(Proto::Auto)));
        assert_eq!(r.key.world, gpus);
        assert!(r.time_us_median > 0.0 && r.algbw_gbps > 0.0, "{r:?}");
        // busbw is algbw times nccl-tests' factor, 0 for most ops on one GPU.
        let factor = r.key.op.busbw_factor(r.key.world);
        assert!(
            (r.busbw_gbps - r.algbw_gbps * factor).abs() <= 1e-9 * r.algbw_gbps,
            "{r:?}"
        );
        // Units: no memory system moves 20 TB/s (HBM3e on B200: 8 TB/s), so a time read 1000x
        // too small shows here.
        assert!(r.algbw_gbps < 20_000.0, "{r:?}");
        assert_eq!(
            r.nccl_call.as_deref(),
            Some(nccl.call_name(r.key.op)),
            "{r:?}"
        );
        let looped = r
            .loop_time_us
            .expect("nccl-tests' loop time of every point");
        assert!(looped > 0.0 && looped.is_finite(), "{r:?}");
    }
    // And a time read 1000x too large: the GPU cannot have been busy longer than the whole run.
    let busy_s: f64 = rows
        .iter()
        .map(|r| {
            (r.iters as f64 * r.time_us_mean + r.iters as f64 * r.loop_time_us.unwrap_or(0.0))
                * 1e-6
        })
        .sum();
    assert!(
        busy_s < wall_s,
        "timed calls add up to {busy_s} s in a {wall_s} s run"
    );
    let dtypes: Vec<DType> = GPU_DTYPES.split(',').map(|d| d.parse().unwrap()).collect();
    // The ops asked for above (Op::ALL also holds algorithms' own ops, such as hypercube).
    let asked: Vec<Op> = args[3].split(',').map(|o| o.parse().unwrap()).collect();
    for op in &asked {
        for d in &dtypes {
            for in_place in [false, true] {
                let has = |r: &&collbench::model::record::PointRecord| {
                    r.key.op == *op && r.key.dtype == *d && r.key.in_place == in_place
                };
                // NCCL's point-to-point ops have no in-place form: not planned in place.
                let want = !(in_place && op.nccl_no_in_place().is_some());
                assert_eq!(
                    rows.iter().any(|r| has(&r)),
                    want,
                    "{op} {d} in place {in_place}"
                );
            }
        }
    }
    let m = meta(&dir);
    assert_eq!(m.backend, "nccl");
    assert!(
        m.library.as_deref().unwrap_or("").starts_with("NCCL 2."),
        "{m:?}"
    );
    assert_eq!(m.gpus.len(), gpus);
    assert!(m.gpus.iter().all(|g| !g.is_empty()), "{:?}", m.gpus);
    // One telemetry row per point and rank, whether or not NVML could run.
    let telemetry =
        collbench::report::telemetry_csv::read_telemetry(&dir.join("telemetry.csv")).unwrap();
    assert_eq!(telemetry.len(), rows.len() * gpus, "telemetry rows");
    for (i, t) in telemetry.iter().enumerate() {
        assert_eq!((t.point, t.rank), (i / gpus, i % gpus));
    }
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_alltoall_alltoallv_and_sendrecv_are_exact_with_and_without_cuda_graphs() {
    let Some(gpus) = gpus_or_skip() else {
        return;
    };
    // Every GPU, and a world of one (each rank sends to and receives from itself).
    let worlds = if gpus > 1 {
        format!("{gpus},1")
    } else {
        "1".to_string()
    };
    for graph in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let mut args = vec![
            "--backend",
            "nccl",
            "--op",
            "alltoall,alltoallv,sendrecv",
            "--world-sizes",
            &worlds,
            "--dtype",
            "f32,bf16,f64,i32",
            // Asked for both: the plan keeps them out of place, with a note.
            "--in-place",
            "both",
            "-b",
            "8",
            "-e",
            "16M",
            "-f",
            "8",
            "--iters",
            "5",
            "--warmup",
            "2",
        ];
        if graph {
            args.push("--cuda-graph");
        }
        let r = sweep_ok(&args, &dir, GPU_LIMIT);
        assert!(
            r.stdout.contains("alltoall in place is not measured"),
            "{}",
            r.stdout
        );
        let rows = summary(&dir);
        for op in [Op::AllToAll, Op::AllToAllV, Op::SendRecv] {
            for d in [DType::F32, DType::BF16, DType::F64, DType::I32] {
                let of: Vec<_> = rows
                    .iter()
                    .filter(|r| r.key.op == op && r.key.dtype == d)
                    .collect();
                assert!(!of.is_empty(), "{op} {d} graph {graph}");
                for r in of {
                    assert_eq!(r.wrong, 0, "{:?} graph {graph}", r.key);
                    assert_eq!((r.key.algo, r.key.proto), (Algo::Auto, Some(Proto::Auto)));
                    assert!(!r.key.in_place, "{:?}", r.key);
                    assert!(r.time_us_median > 0.0, "{r:?}");
                    // No ncclGroupSimulateEnd for point-to-point groups.
                    assert_eq!(r.nccl_estimate_us, None, "{:?}", r.key);
                    let factor = op.busbw_factor(r.key.world);
                    assert!((r.busbw_gbps - r.algbw_gbps * factor).abs() <= 1e-9 * r.algbw_gbps);
                }
            }
        }
        let mut worlds_seen: Vec<usize> = rows.iter().map(|r| r.key.world).collect();
        worlds_seen.dedup();
        assert_eq!(worlds_seen.first(), Some(&gpus));
        assert_eq!(meta(&dir).options["cuda_graph"], graph);
    }
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_point_to_point_ops_are_measured_once_under_forced_protocols() {
    if gpus_or_skip().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce,sendrecv",
        "--proto",
        "simple,auto",
        "-b",
        "1K",
        "-e",
        "1M",
        "-f",
        "32",
        "--iters",
        "5",
    ];
    let r = sweep_ok(&args, &dir, GPU_LIMIT);
    assert!(
        r.stdout
            .contains("sendrecv: measured with protocol auto only"),
        "{}",
        r.stdout
    );
    let rows = summary(&dir);
    let count = |op: Op, proto: Proto| {
        rows.iter()
            .filter(|r| r.key.op == op && r.key.proto == Some(proto))
            .count()
    };
    // 1K, 32K, 1M.
    assert_eq!(count(Op::AllReduce, Proto::Simple), 3);
    assert_eq!(count(Op::AllReduce, Proto::Auto), 3);
    assert_eq!(count(Op::SendRecv, Proto::Simple), 0);
    assert_eq!(count(Op::SendRecv, Proto::Auto), 3);
    assert!(rows.iter().all(|r| r.wrong == 0));
}

#[test]
#[ignore = "needs at least two NVIDIA GPUs, their driver and libnccl"]
fn gpu_world_sizes_split_the_world_communicator() {
    let Some(gpus) = gpus_or_skip() else {
        return;
    };
    if gpus < 2 {
        super::common::skip::skipped("one GPU; this test needs two");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let sizes = if gpus == 2 {
        "2,1".to_string()
    } else {
        format!("{gpus},2,1")
    };
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce,allgather",
        "--world-sizes",
        &sizes,
        "-b",
        "4K",
        "-e",
        "64K",
        "-f",
        "4",
        "--iters",
        "4",
    ];
    sweep_dir(&args, &dir);
    let rows = summary(&dir);
    let mut worlds: Vec<usize> = rows.iter().map(|r| r.key.world).collect();
    worlds.dedup();
    let want: Vec<usize> = if gpus == 2 {
        vec![2, 1]
    } else {
        vec![gpus, 2, 1]
    };
    assert_eq!(worlds, want, "largest group first, then each split");
    assert!(rows.iter().all(|r| r.wrong == 0));
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_more_ranks_than_gpus_is_refused_in_one_line() {
    let Some(gpus) = gpus_or_skip() else {
        return;
    };
    let too_many = (gpus + 1).to_string();
    let r = run(
        &["sweep", "--backend", "nccl", "--ranks", &too_many],
        GPU_LIMIT,
    );
    assert_eq!(r.code(), 2, "{r:?}");
    let want = format!("--ranks {too_many} but this node has {gpus} GPU(s)");
    assert!(r.stderr.contains(&want), "{r:?}");
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_rooted_ops_are_exact_from_every_root() {
    let Some(gpus) = gpus_or_skip() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    #[rustfmt::skip]
    let args = [
        "--backend", "nccl", "--op", "broadcast,reduce,gather,scatter", "--root", "all",
        "--dtype", "f32,bf16", "--in-place", "both", "-b", "64", "-e", "1M", "-f", "128",
        "--iters", "5", "--warmup", "2",
    ];
    sweep_dir(&args, &dir);
    let rows = summary(&dir);
    // ops x roots x dtypes x placements x sizes (64 B, 8 KiB, 1 MiB; per-rank ops round).
    assert!(rows.len() >= 4 * gpus * 2 * 2 * 2, "{} rows", rows.len());
    for root in 0..gpus {
        for op in ["broadcast", "reduce", "gather", "scatter"] {
            let n = rows
                .iter()
                .filter(|r| r.key.op.name() == op && r.key.root == Some(root))
                .count();
            assert!(n >= 2 * 2 * 2, "{op} root {root}: {n} rows");
        }
    }
    assert!(rows.iter().all(|r| r.wrong == 0), "a wrong point");
}
