use std::collections::HashMap;

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

/// A set of variables and what its error must say.
type Case = (Vec<(&'static str, &'static str)>, &'static [&'static str]);

#[test]
fn malformed_values_name_the_variable_and_value() {
    let cases: Vec<Case> = vec![
        (
            with(OMPI, &[("OMPI_COMM_WORLD_RANK", "five")]),
            &["OMPI_COMM_WORLD_RANK='five'", "whole number", "mpirun"],
        ),
        (
            with(OMPI, &[("OMPI_COMM_WORLD_RANK", "-1")]),
            &["OMPI_COMM_WORLD_RANK='-1'"],
        ),
        (
            with(OMPI, &[("OMPI_COMM_WORLD_RANK", "8")]),
            &["OMPI_COMM_WORLD_RANK=8 is not below OMPI_COMM_WORLD_SIZE=8"],
        ),
        (
            with(
                OMPI,
                &[("OMPI_COMM_WORLD_SIZE", "0"), ("OMPI_COMM_WORLD_RANK", "0")],
            ),
            &["OMPI_COMM_WORLD_SIZE=0"],
        ),
        (
            with(OMPI, &[("OMPI_COMM_WORLD_SIZE", "")]),
            &["OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not"],
        ),
        (
            with(OMPI, &[("OMPI_COMM_WORLD_RANK", "")]),
            &["OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not"],
        ),
        (
            with(OMPI, &[("OMPI_COMM_WORLD_LOCAL_RANK", "4")]),
            &["OMPI_COMM_WORLD_LOCAL_RANK=4 is not below OMPI_COMM_WORLD_LOCAL_SIZE=4"],
        ),
        (
            with(OMPI, &[("OMPI_COMM_WORLD_LOCAL_SIZE", "9")]),
            &["OMPI_COMM_WORLD_LOCAL_SIZE=9", "OMPI_COMM_WORLD_SIZE=8"],
        ),
        (
            with(OMPI, &[("OMPI_COMM_WORLD_SIZE", "99999999999999999999999")]),
            &["OMPI_COMM_WORLD_SIZE='99999999999999999999999' is too large"],
        ),
        (
            with(OMPI, &[("COLLBENCH_STORE_ADDR", "head")]),
            &["COLLBENCH_STORE_ADDR='head'", "no :port"],
        ),
        (
            with(OMPI, &[("COLLBENCH_STORE_ADDR", "head:0")]),
            &["COLLBENCH_STORE_ADDR='head:0'", "port number"],
        ),
        (
            with(OMPI, &[("COLLBENCH_STORE_ADDR", "head:70000")]),
            &["'head:70000'", "port number"],
        ),
        (
            with(OMPI, &[("COLLBENCH_STORE_ADDR", ":29517")]),
            &["':29517'", "no host"],
        ),
        (
            with(OMPI, &[("COLLBENCH_STORE_ADDR", "fd00::1:29517")]),
            &["'fd00::1:29517'", "brackets"],
        ),
        (
            with(OMPI, &[("COLLBENCH_STORE_ADDR", "[nothost]:1")]),
            &["'[nothost]:1'", "IPv6"],
        ),
        (
            with(OMPI, &[("COLLBENCH_TOKEN", "xyz")]),
            &[
                "COLLBENCH_TOKEN has a character that is not a hex digit (character 1 of 3)",
                "openssl rand",
            ],
        ),
        (
            with(OMPI, &[("COLLBENCH_TOKEN", "abcdef")]),
            &["COLLBENCH_TOKEN has 6 hex digits", "16 to 512"],
        ),
        (
            with(OMPI, &[("COLLBENCH_TOKEN", "0123456789abcdef0")]),
            &["COLLBENCH_TOKEN has 17 hex digits, expected an even number"],
        ),
        (
            with(SLURM, &[("SLURM_NTASKS", ""), ("SLURM_STEP_NUM_TASKS", "")]),
            &["SLURM_PROCID is set but SLURM_NTASKS is not"],
        ),
        (
            with(SLURM, &[("SLURM_STEP_NUM_TASKS", "6")]),
            &["SLURM_PROCID=6 is not below SLURM_STEP_NUM_TASKS=6", "srun"],
        ),
        (with(SLURM, &[("SLURM_NODEID", "x")]), &["SLURM_NODEID='x'"]),
        (
            with(SLURM, &[("SLURM_NODEID", "4")]),
            &[
                "SLURM_NODEID=4",
                "SLURM_STEP_TASKS_PER_NODE='2(x3),1'",
                "4 nodes",
            ],
        ),
        (
            with(
                SLURM,
                &[("SLURM_NODEID", "4"), ("SLURM_STEP_TASKS_PER_NODE", "")],
            ),
            &[
                "SLURM_NODEID=4",
                "SLURM_STEP_NODELIST='node[01-03,07]'",
                "4 hosts",
            ],
        ),
        (
            with(SLURM, &[("SLURM_STEP_TASKS_PER_NODE", "2(x3")]),
            &["SLURM_STEP_TASKS_PER_NODE='2(x3'"],
        ),
        (
            with(SLURM, &[("SLURM_LOCALID", "1")]),
            &["SLURM_LOCALID=1 is not below SLURM_STEP_TASKS_PER_NODE=1"],
        ),
        (
            with(SLURM, &[("SLURM_STEP_NODELIST", "node[01-03")]),
            &["SLURM_STEP_NODELIST", "'node[01-03'", "never closed"],
        ),
        (
            with(SLURM, &[("MASTER_PORT", "http")]),
            &["MASTER_PORT='http'", "port number"],
        ),
        (
            with(TORCHRUN, &[("WORLD_SIZE", "")]),
            &["RANK is set but WORLD_SIZE is not", "torchrun"],
        ),
        (
            with(TORCHRUN, &[("RANK", ""), ("TORCHELASTIC_RUN_ID", "")]),
            &["WORLD_SIZE is set but RANK is not"],
        ),
        (
            with(TORCHRUN, &[("RANK", "4")]),
            &["RANK=4 is not below WORLD_SIZE=4"],
        ),
        (
            with(TORCHRUN, &[("LOCAL_RANK", "2")]),
            &["LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"],
        ),
        (
            with(TORCHRUN, &[("GROUP_RANK", "one")]),
            &["GROUP_RANK='one'"],
        ),
        (
            with(TORCHRUN, &[("MASTER_PORT", "0")]),
            &["MASTER_PORT='0'", "port number"],
        ),
        (
            with(
                TORCHRUN,
                &[
                    ("MASTER_PORT", "65535"),
                    ("TORCHELASTIC_USE_AGENT_STORE", "True"),
                ],
            ),
            &["MASTER_PORT=65535", "COLLBENCH_STORE_ADDR"],
        ),
        (
            with(TORCHRUN, &[("MASTER_ADDR", "")]),
            &["MASTER_ADDR is not set", "COLLBENCH_STORE_ADDR"],
        ),
        (
            with(TORCHRUN, &[("MASTER_ADDR", "host:29500")]),
            &["MASTER_ADDR='host:29500'", "without a port"],
        ),
    ];
    for (pairs, wanted) in cases {
        let err = usage_error(&pairs);
        for w in wanted {
            assert!(err.contains(w), "{pairs:?}\n  error: {err}\n  lacks: {w}");
        }
    }
}

#[test]
fn tokens_decode_from_hex() {
    let t: u64 = 0x0123_4567_89ab_cdef;
    assert_eq!(parse_token(&format!("{t:016x}")).unwrap(), t.to_be_bytes());
    assert_eq!(parse_token("0x0123456789ABCDEF").unwrap(), t.to_be_bytes());
    assert_eq!(parse_token(&"ab".repeat(32)).unwrap(), vec![0xab; 32]);
    assert!(parse_token(&"ab".repeat(MAX_TOKEN_BYTES + 1)).is_err());
    assert!(parse_token("0123456789abcdeg").is_err());
}

/// A token is a secret: a malformed one is described, never printed.
#[test]
fn malformed_tokens_are_described_not_echoed() {
    for bad in [
        "0123456789abcde",
        "s3cr3t-but-wrong-s3cr3t",
        "0123456789abcdef\x1b[2J",
    ] {
        let msg = parse_token(bad).unwrap_err().to_string();
        assert!(
            !msg.contains(bad) && !msg.contains("s3cr3t") && !msg.contains('\x1b'),
            "{msg}"
        );
        assert!(msg.contains("COLLBENCH_TOKEN has"), "{msg}");
    }
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
