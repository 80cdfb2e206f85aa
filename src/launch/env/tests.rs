//! Which launcher started the process and what it says: Open MPI, Slurm and torchrun variables,
//! their priority, and the small parsers beside them.

use std::collections::HashMap;

use super::launchers::tasks_per_node;
use super::*;

fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name: &str| map.get(name).cloned()
}

fn found(pairs: &[(&str, &str)]) -> Bootstrap {
    detect(&lookup(pairs))
        .unwrap_or_else(|e| panic!("{pairs:?}: {e}"))
        .unwrap_or_else(|| panic!("{pairs:?}: no launcher detected"))
}

fn usage_error(pairs: &[(&str, &str)]) -> String {
    match detect(&lookup(pairs)) {
        Err(e @ Error::Usage(_)) => {
            assert_eq!(e.exit_code(), 2);
            e.to_string()
        }
        other => panic!("{pairs:?}: expected a usage error, got {other:?}"),
    }
}

const OMPI: &[(&str, &str)] = &[
    ("OMPI_COMM_WORLD_RANK", "5"),
    ("OMPI_COMM_WORLD_SIZE", "8"),
    ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
    ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
    ("OMPI_COMM_WORLD_NODE_RANK", "1"),
    ("COLLBENCH_STORE_ADDR", "head:4000"),
];

const SLURM: &[(&str, &str)] = &[
    ("SLURM_PROCID", "6"),
    ("SLURM_NTASKS", "8"),
    ("SLURM_STEP_NUM_TASKS", "8"),
    ("SLURM_STEP_ID", "0"),
    ("SLURM_LOCALID", "0"),
    ("SLURM_NODEID", "3"),
    ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
    ("SLURM_STEP_NODELIST", "node[01-03,07]"),
    ("SLURM_JOB_NODELIST", "node[01-09]"),
    ("SLURM_JOB_ID", "4242"),
];

const TORCHRUN: &[(&str, &str)] = &[
    ("RANK", "3"),
    ("WORLD_SIZE", "4"),
    ("LOCAL_RANK", "1"),
    ("LOCAL_WORLD_SIZE", "2"),
    ("GROUP_RANK", "1"),
    ("MASTER_ADDR", "10.0.0.1"),
    ("MASTER_PORT", "29500"),
    ("TORCHELASTIC_RUN_ID", "job7"),
];

fn with(
    base: &[(&'static str, &'static str)],
    extra: &[(&'static str, &'static str)],
) -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<_> = base
        .iter()
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
        .copied()
        .collect();
    v.extend(extra.iter().copied().filter(|(_, val)| !val.is_empty()));
    v
}

#[test]
fn no_launcher_variables_mean_none() {
    assert_eq!(detect(&lookup(&[])).unwrap(), None);
    let unrelated = [("HOME", "/root"), ("LOCAL_RANK", "0"), ("MASTER_PORT", "1")];
    assert_eq!(detect(&lookup(&unrelated)).unwrap(), None);
    // A Slurm batch script or salloc shell: SLURM_PROCID but no job step.
    let batch = [
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "8"),
        ("SLURM_JOB_NODELIST", "n[1-2]"),
    ];
    assert_eq!(detect(&lookup(&batch)).unwrap(), None);
}

#[test]
fn open_mpi_from_its_variables() {
    let b = found(OMPI);
    assert_eq!(b.launcher, Launcher::OpenMpi);
    assert_eq!((b.rank, b.world), (5, 8));
    assert_eq!((b.local_rank, b.local_world), (Some(1), Some(4)));
    assert_eq!(
        b.node, None,
        "OMPI_COMM_WORLD_NODE_RANK is not a node index"
    );
    assert_eq!(b.hosts, None);
    assert_eq!(b.master, Some(("head".to_string(), 4000)));
    assert_eq!(b.master_origin, "COLLBENCH_STORE_ADDR");
    assert_eq!(b.store_addr().as_deref(), Some("head:4000"));
    assert_eq!(b.store_bind_addr().as_deref(), Some("0.0.0.0:4000"));

    // Without a store address Open MPI gives no way to find rank 0 ...
    let err = usage_error(&with(OMPI, &[("COLLBENCH_STORE_ADDR", "")]));
    assert!(
        err.contains("COLLBENCH_STORE_ADDR") && err.contains("mpirun -x"),
        "{err}"
    );
    // ... unless MASTER_ADDR was exported; the port then defaults.
    let b = found(&with(
        OMPI,
        &[("COLLBENCH_STORE_ADDR", ""), ("MASTER_ADDR", "fd00::7")],
    ));
    assert_eq!(b.master, Some(("fd00::7".to_string(), DEFAULT_STORE_PORT)));
    assert_eq!(
        b.store_addr().unwrap(),
        format!("[fd00::7]:{DEFAULT_STORE_PORT}")
    );
    assert_eq!(
        b.store_bind_addr().unwrap(),
        format!("[::]:{DEFAULT_STORE_PORT}")
    );
    // A world of one needs no store.
    let solo = [("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "1")];
    assert_eq!(found(&solo).master, None);
}

#[test]
fn slurm_from_its_variables() {
    let b = found(SLURM);
    assert_eq!(b.launcher, Launcher::Slurm);
    assert_eq!((b.rank, b.world), (6, 8));
    assert_eq!(
        (b.local_rank, b.local_world, b.node),
        (Some(0), Some(1), Some(3))
    );
    let hosts = ["node01", "node02", "node03", "node07"]
        .map(String::from)
        .to_vec();
    assert_eq!(b.hosts, Some(hosts));
    assert_eq!(b.master, Some(("node01".to_string(), DEFAULT_STORE_PORT)));
    assert!(
        b.master_origin.contains("SLURM_STEP_NODELIST"),
        "{}",
        b.master_origin
    );
    assert_eq!(b.job_id.as_deref(), Some("4242.0"));

    let b = found(&with(
        SLURM,
        &[("MASTER_PORT", "31000"), ("SLURM_STEP_NODELIST", "")],
    ));
    assert_eq!(
        b.master,
        Some(("node01".to_string(), 31000)),
        "job list, MASTER_PORT"
    );
    assert!(b.master_origin.contains("SLURM_JOB_NODELIST"));
    let b = found(&with(
        SLURM,
        &[
            ("COLLBENCH_STORE_ADDR", "[::1]:5000"),
            ("COLLBENCH_TOKEN", "00000000000000ff"),
        ],
    ));
    assert_eq!(b.master, Some(("::1".to_string(), 5000)));
    assert_eq!(b.token, Some(vec![0, 0, 0, 0, 0, 0, 0, 0xff]));
    // Older Slurm: SLURM_STEPID and SLURM_NPROCS only.
    let old = [
        ("SLURM_PROCID", "1"),
        ("SLURM_NPROCS", "2"),
        ("SLURM_STEPID", "3"),
        ("SLURM_NODELIST", "a,b"),
    ];
    let b = found(&old);
    assert_eq!(
        (b.rank, b.world, b.master),
        (1, 2, Some(("a".to_string(), DEFAULT_STORE_PORT)))
    );
}

#[test]
fn torchrun_from_its_variables() {
    let b = found(TORCHRUN);
    assert_eq!(b.launcher, Launcher::Torchrun);
    assert_eq!(
        (b.rank, b.world, b.local_rank, b.local_world),
        (3, 4, Some(1), Some(2))
    );
    assert_eq!(b.node, Some(1));
    assert_eq!(b.master, Some(("10.0.0.1".to_string(), 29500)));
    assert_eq!(b.job_id.as_deref(), Some("job7"));
    // torchrun's agent holds MASTER_PORT: the store moves one up.
    let b = found(&with(TORCHRUN, &[("TORCHELASTIC_USE_AGENT_STORE", "True")]));
    assert_eq!(b.master, Some(("10.0.0.1".to_string(), 29501)));
    assert!(b.master_origin.contains("MASTER_PORT+1"));
    // A torchrun-style launcher that sets only the basics; NODE_RANK stands in for GROUP_RANK.
    let basic = [
        ("RANK", "0"),
        ("WORLD_SIZE", "2"),
        ("NODE_RANK", "0"),
        ("MASTER_ADDR", "[fd00::1]"),
    ];
    let b = found(&basic);
    assert_eq!((b.local_rank, b.node), (None, Some(0)));
    assert_eq!(b.master, Some(("fd00::1".to_string(), DEFAULT_STORE_PORT)));
}

#[test]
fn priority_when_several_launchers_are_present() {
    // mpirun inside a Slurm allocation: Open MPI's own numbering wins.
    let both = with(OMPI, SLURM);
    assert_eq!(found(&both).launcher, Launcher::OpenMpi);
    // Slurm with stray torch variables (no torchrun agent): Slurm wins.
    let stray = with(SLURM, &[("RANK", "0"), ("WORLD_SIZE", "1")]);
    assert_eq!(found(&stray).launcher, Launcher::Slurm);
    // `srun torchrun ...`: the worker's torchrun numbering wins over its agent's Slurm task.
    let nested = with(SLURM, TORCHRUN);
    let b = found(&nested);
    assert_eq!((b.launcher, b.rank, b.world), (Launcher::Torchrun, 3, 4));
    // ... and over Open MPI's, for `mpirun torchrun ...`.
    assert_eq!(found(&with(OMPI, TORCHRUN)).launcher, Launcher::Torchrun);
}

#[test]
fn tasks_per_node_expand() {
    assert_eq!(tasks_per_node("2(x3),1"), Some(vec![2, 2, 2, 1]));
    assert_eq!(tasks_per_node("4"), Some(vec![4]));
    for bad in ["", "2(x0)", "x", "2(x3", "2(3)", "-1"] {
        assert_eq!(tasks_per_node(bad), None, "{bad}");
    }
}

#[test]
fn host_and_port_join() {
    assert_eq!(join_host_port("node1", 80), "node1:80");
    assert_eq!(join_host_port("::1", 80), "[::1]:80");
}

mod malformed;

#[test]
fn launcher_rank_needs_no_store_address() {
    assert_eq!(launcher_rank(&lookup(&[])), None);
    let ompi = lookup(&[("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "4")]);
    assert_eq!(launcher_rank(&ompi), Some(3));
    assert_eq!(launcher_rank(&lookup(&[("PMI_RANK", " 0 ")])), Some(0));
    assert_eq!(launcher_rank(&lookup(&[("SLURM_PROCID", "7")])), Some(7));
    // A rank that is not a number is no rank; the next variable may still give one.
    let bad = lookup(&[("OMPI_COMM_WORLD_RANK", "x"), ("RANK", "1")]);
    assert_eq!(launcher_rank(&bad), Some(1));
}
