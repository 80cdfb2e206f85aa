//! collbench under a real Slurm: two nodes (n1, n2) of the cluster of scripts/slurm-local.sh
//! (`.ci/run` starts it; elsewhere these tests say SKIPPED), named with `-w` so that the others
//! never stand in. srun starts the ranks as on any cluster; the nodes are Slurm's
//! (`SLURMD_NODENAME`), though all run on this machine.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use collbench::meta::RunStatus;
use common::slurm::{cluster, scancel, srun, srun_to_end, task_pid};
use common::{csv_rows, meta, serial, signal, summary, summary_rows_on_disk, wait_until};

const ALL_OPS: &str =
    "allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv,gather,scatter";

fn limit() -> Duration {
    common::hang_limit(Duration::from_secs(300))
}

fn sweep_args<'a>(out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
    a.extend_from_slice(extra);
    a
}

#[test]
fn srun_over_two_nodes_is_exact_and_names_the_nodes_as_slurm_does() {
    let Some(conf) = cluster() else { return };
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let extra = [
        "--op",
        ALL_OPS,
        "--in-place",
        "both",
        "-b",
        "8",
        "-e",
        "1M",
        "-f",
        "32",
        "--iters",
        "3",
        "--warmup",
        "1",
    ];
    let r = srun_to_end(
        &conf,
        &["-N", "2", "-w", "n1,n2", "--ntasks-per-node=2"],
        &sweep_args(&out, &extra),
        limit(),
    );
    assert_eq!(r.code(), 0, "{r:?}");
    let m = meta(&out);
    assert_eq!(m.status, RunStatus::Complete);
    assert_eq!((m.ranks, m.nodes), (4, 2), "{m:?}");
    assert_eq!(m.hosts, vec!["n1".to_string(), "n2".to_string()], "{m:?}");
    let rows = summary(&out);
    for op in ALL_OPS.split(',') {
        let of_op: Vec<_> = rows.iter().filter(|r| r.key.op.name() == op).collect();
        assert!(!of_op.is_empty(), "no {op} rows");
        for r in of_op {
            assert_eq!(r.wrong, 0, "{:?}", r.key);
        }
    }
    // Every world size measured spans what it should: 4 ranks on both nodes.
    assert!(
        rows.iter().any(|r| r.key.world == 4 && r.key.nodes == 2),
        "{rows:?}"
    );
}

#[test]
fn srun_pairs_names_each_pair_by_its_slurm_nodes() {
    let Some(conf) = cluster() else { return };
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let extra = [
        "--pairs", "-b", "1K", "-e", "64K", "-f", "8", "--iters", "5",
    ];
    let r = srun_to_end(
        &conf,
        &["-N", "2", "-w", "n1,n2", "--ntasks-per-node=1"],
        &sweep_args(&out, &extra),
        limit(),
    );
    assert_eq!(r.code(), 0, "{r:?}");
    let pairs = csv_rows(&out.join("pairs.csv"));
    assert!(!pairs.is_empty());
    for p in &pairs {
        assert_eq!(
            (p["host_a"].as_str(), p["host_b"].as_str()),
            ("n1", "n2"),
            "{p:?}"
        );
    }
    assert!(summary(&out).iter().all(|r| r.wrong == 0));
}

#[test]
fn accept_under_srun_judges_a_run_on_the_slurm_nodes() {
    let Some(conf) = cluster() else { return };
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let criteria = tmp.path().join("c.toml");
    std::fs::write(
        &criteria,
        "name = \"slurm\"\n[sweep]\nbackend = \"host\"\nop = [\"allreduce\"]\nmin_bytes = \"1K\"\n\
         max_bytes = \"64K\"\nfactor = 8\niters = 5\n[[criterion]]\nname = \"exact\"\n\
         max_wrong = 0\n",
    )
    .unwrap();
    let results = tmp.path().join("results");
    let args = [
        "accept",
        "--criteria",
        criteria.to_str().unwrap(),
        "--out",
        results.to_str().unwrap(),
        "--json",
    ];
    let r = srun_to_end(
        &conf,
        &["-N", "2", "-w", "n1,n2", "--ntasks-per-node=1"],
        &args,
        limit(),
    );
    assert_eq!(r.code(), 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("the verdict as JSON");
    assert_eq!(v["result"], "pass", "{v}");
    let run = std::fs::read_dir(&results)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.join("meta.json").exists())
        .expect("accept's run folder");
    assert_eq!(meta(&run).hosts, vec!["n1".to_string(), "n2".to_string()]);
}

/// Starts a long sweep over both nodes under job name `name` and waits for its first point.
fn long_sweep(conf: &Path, out: &Path, name: &str) -> common::Spawned {
    let extra = [
        "--op",
        "allreduce",
        "-b",
        "64K",
        "-e",
        "64M",
        "-f",
        "2",
        "--iters",
        "2000",
        "--timeout",
        "10s",
    ];
    let job = srun(
        conf,
        &["-N", "2", "-w", "n1,n2", "--ntasks-per-node=2"],
        &sweep_args(out, &extra),
        name,
    );
    assert!(
        wait_until(limit(), || summary_rows_on_disk(out) > 0),
        "no first point"
    );
    job
}

#[test]
fn a_killed_task_is_named_and_the_folder_stays_readable() {
    let Some(conf) = cluster() else { return };
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let name = format!("cb-kill-{}", std::process::id());
    let started = Instant::now();
    let job = long_sweep(&conf, &out, &name);
    let pid = task_pid(&name, 2).expect("rank 2's task runs");
    signal(pid, libc::SIGKILL);
    let r = job.finish(started, limit());
    assert_ne!(r.code(), 0, "{r:?}");
    let m = meta(&out);
    assert_eq!(m.status, RunStatus::Failed, "{m:?}");
    let error = m.error.clone().unwrap_or_default();
    assert!(error.contains("rank 2 (host n2)"), "{error}");
    assert!(r.stderr.contains("rank 2 (host n2)"), "{r:?}");
    assert!(!summary(&out).is_empty());
}

#[test]
fn scancel_ends_the_run_and_keeps_what_was_written() {
    let Some(conf) = cluster() else { return };
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let name = format!("cb-scancel-{}", std::process::id());
    let started = Instant::now();
    let job = long_sweep(&conf, &out, &name);
    scancel(&conf, &name);
    let r = job.finish(started, limit());
    assert_ne!(r.code(), 0, "{r:?}");
    let m = meta(&out);
    assert!(
        matches!(m.status, RunStatus::Interrupted | RunStatus::Failed),
        "{m:?}"
    );
    let rows = summary(&out);
    assert!(!rows.is_empty() && rows.len() == m.points, "{m:?}");
    assert!(
        task_pid(&name, 0).is_none() && task_pid(&name, 2).is_none(),
        "orphans"
    );
}

#[cfg(feature = "mpi")]
#[test]
fn srun_starts_the_mpi_backend_through_pmix() {
    let Some(conf) = cluster() else { return };
    let _one = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let extra = [
        "--backend",
        "mpi",
        "--op",
        "allreduce,allgather",
        "-b",
        "8",
        "-e",
        "64K",
        "-f",
        "16",
        "--iters",
        "3",
    ];
    // Both nodes of this cluster are one host: Open MPI's shared-memory transport (vader) names
    // its segments by host name and local rank, so rank 0 of n1 and rank 0 of n2 would map the
    // same segment and crash (SIGSEGV in MPI_Init). Without it ranks talk over TCP, as they
    // would between real nodes, on loopback: the one host's other interfaces may refuse a
    // connection to itself (seen once: "connect() to 192.0.2.2:1027 failed", then SIGSEGV).
    let r = srun_to_end(
        &conf,
        &[
            "-N",
            "2",
            "-w",
            "n1,n2",
            "--ntasks-per-node=2",
            "--mpi=pmix",
            "--export=ALL,OMPI_MCA_btl=^vader,OMPI_MCA_btl_tcp_if_include=lo",
        ],
        &sweep_args(&out, &extra),
        limit(),
    );
    assert_eq!(r.code(), 0, "{r:?}");
    let m = meta(&out);
    assert_eq!(
        (m.backend.as_str(), m.ranks, m.nodes),
        ("mpi", 4, 2),
        "{m:?}"
    );
    assert_eq!(m.hosts, vec!["n1".to_string(), "n2".to_string()]);
    assert!(summary(&out).iter().all(|r| r.wrong == 0));
}
