//! Malformed and inconsistent launcher values and tokens: every error names the variable, its
//! value and the fix, and a token's value is never echoed.

use super::*;

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
