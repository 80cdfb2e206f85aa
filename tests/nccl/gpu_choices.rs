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
        "--graph-launches",
        "3",
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
        // nccl-tests' loop: one graph of the 10 iterations, launched 3 times.
        let looped = r.loop_time_us.expect("the loop's time");
        assert!(looped > 0.0 && looped.is_finite(), "{r:?}");
    }
    let m = meta(&dir);
    assert_eq!(m.options["cuda_graph"], true, "{:?}", m.options);
    assert_eq!(m.options["graph_launches"], 3, "{:?}", m.options);
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_every_registration_the_library_has_is_exact_and_recorded_per_point() {
    use collbench::model::call::Register;
    if gpus_or_skip().is_none() {
        return;
    }
    let nccl = collbench::backend::nccl::loader::Nccl::load().expect("libnccl");
    let symmetric = nccl.window_register.is_some() && nccl.mem_alloc.is_some();
    let modes = if symmetric {
        "none,local,symmetric"
    } else {
        "none,local"
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce,allgather,reducescatter,alltoall",
        "--register",
        modes,
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
    assert!(rows.iter().all(|r| r.wrong == 0), "{rows:?}");
    let per_mode = |r: Option<Register>| rows.iter().filter(|p| p.key.comm.register == r).count();
    let plain = per_mode(None);
    assert!(
        plain > 0 && per_mode(Some(Register::Local)) == plain,
        "{rows:?}"
    );
    if symmetric {
        assert_eq!(per_mode(Some(Register::Symmetric)), plain);
    }
    let m = meta(&dir);
    assert_eq!(m.options["buffers"], "ncclMemAlloc", "{:?}", m.options);
    assert_eq!(
        m.options["comm_setups"].as_array().unwrap().len(),
        modes.split(',').count()
    );
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_aggregated_calls_and_cta_bounds_are_exact_and_recorded() {
    if gpus_or_skip().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce,allgather,sendrecv",
        "--in-place",
        "both",
        "--agg",
        "4",
        "--ctas",
        "1,2:8",
        "-b",
        "8",
        "-e",
        "1M",
        "-f",
        "128",
        "--iters",
        "5",
    ];
    sweep_dir(&args, &dir);
    let rows = summary(&dir);
    assert!(!rows.is_empty());
    // In place, four grouped calls on one buffer would compound a sum: the checked call is one.
    assert!(rows.iter().all(|r| r.wrong == 0), "{rows:?}");
    let ctas: Vec<String> = rows
        .iter()
        .filter_map(|r| r.key.comm.ctas.map(|c| c.to_string()))
        .collect();
    assert_eq!(ctas.len(), rows.len());
    assert!(
        ctas.iter().any(|c| c == "1") && ctas.iter().any(|c| c == "2:8"),
        "{ctas:?}"
    );
    assert!(
        rows.iter().all(|r| r.loop_time_us.is_some_and(|t| t > 0.0)),
        "{rows:?}"
    );
    let m = meta(&dir);
    assert_eq!(m.options["agg_iters"], 4, "{:?}", m.options);
    assert_eq!(
        m.options["nccl_configs"][1]["maxCTAs"], 8,
        "{:?}",
        m.options
    );
}

/// The pid of the NCCL rank `rank` that the launcher `launcher` started, once it runs.
fn nccl_rank_pid(launcher: u32, rank: usize) -> Option<u32> {
    let want = format!("COLLBENCH_NCCL_RANK={rank}/");
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|&pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let child = super::common::proc_info(pid).is_some_and(|p| p.ppid == launcher);
            child
                && env
                    .split(|&b| b == 0)
                    .any(|v| v.starts_with(want.as_bytes()))
        })
}

#[test]
#[ignore = "needs two NVIDIA GPUs, their driver and libnccl"]
fn gpu_a_stopped_rank_is_named_and_the_run_closed_as_failed() {
    use super::common::{signal, summary_rows_on_disk, wait_until, Spawned};
    use std::time::{Duration, Instant};
    let Some(gpus) = gpus_or_skip() else { return };
    if gpus < 2 {
        super::common::skip::skipped(
            "needs two GPUs: one rank is stopped while another waits for it",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "sweep",
        "--no-progress",
        "--backend",
        "nccl",
        "--ranks",
        "2",
        "--op",
        "allreduce",
        "-b",
        "1M",
        "-e",
        "1G",
        "-f",
        "2",
        "--iters",
        "2000",
        "--timeout",
        "5s",
    ];
    let mut cmd = super::common::command(&args);
    cmd.arg("--out").arg(&dir);
    let started = Instant::now();
    let mut launch = Spawned::start(cmd);
    let limit = super::common::hang_limit(Duration::from_secs(300));
    // Rank 1 is stopped once the first point is on disk: the ranks are then in their loops.
    assert!(wait_until(limit, || summary_rows_on_disk(&dir) > 0
        || !launch.running()));
    let pid = nccl_rank_pid(launch.pid(), 1).expect("rank 1 runs");
    signal(pid, libc::SIGSTOP);
    let r = launch.finish(started, limit);
    assert_eq!(r.code(), 2, "{r:?}");
    let line = r
        .stderr_lines()
        .last()
        .copied()
        .unwrap_or_default()
        .to_string();
    assert!(line.contains("nccl rank 1 is stopped"), "{line}");
    let m = meta(&dir);
    assert_eq!(m.status, collbench::meta::RunStatus::Failed, "{m:?}");
    let error = m.error.clone().unwrap_or_default();
    assert!(
        error.contains("rank 1 (host ") && error.contains("is stopped"),
        "{error}"
    );
    assert!(!summary(&dir).is_empty());
}

#[test]
#[ignore = "needs NVIDIA GPUs, their driver and libnccl"]
fn gpu_a_soak_for_a_duration_repeats_whole_cycles_exactly() {
    if gpus_or_skip().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let args = [
        "--backend",
        "nccl",
        "--op",
        "allreduce,allgather",
        "-b",
        "1K",
        "-e",
        "1M",
        "-f",
        "32",
        "--iters",
        "10",
        "--warmup",
        "2",
        "--duration",
        "3s",
    ];
    sweep_dir(&args, &dir);
    let rows = summary(&dir);
    // 3 sizes of 2 ops a cycle; at least one whole cycle, none cut.
    assert!(
        !rows.is_empty() && rows.len() % 6 == 0,
        "{} rows",
        rows.len()
    );
    for (i, r) in rows.iter().enumerate() {
        assert_eq!((r.cycle, r.wrong), ((i / 6) as u64, 0), "{r:?}");
        assert!(r.ended_utc.is_some(), "{r:?}");
    }
    assert_eq!(meta(&dir).options["soak"]["duration_s"], 3.0);
}
