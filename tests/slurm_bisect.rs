//! `collbench sweep --bisect` under a real Slurm: srun starts one rank on each of the four
//! nodes of scripts/slurm-local.sh, and the rank on n4 gets a quarter of the CPU time (a
//! wrapper stops it 15 ms of every 20, as a node that a runaway process or thermal throttling
//! slows would).
//! Bisection must name n4 in two rounds: halves n1,n2 and n3,n4, then n3 and n4 each beside n1.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::slurm::{cluster_of, srun_through};

/// `slow-node.sh NODE EXE ARGS...` runs collbench (EXE); on node NODE it is stopped 15 ms of
/// every 20 until it ends, and let go when the wrapper is told to stop.
const SLOW_NODE_WRAPPER: &str = r#"#!/usr/bin/env bash
slow="$1"; exe="$2"; shift 2
if [ "${SLURMD_NODENAME:-}" != "$slow" ]; then exec "$exe" "$@"; fi
"$exe" "$@" &
pid=$!
( while kill -STOP "$pid" 2>/dev/null; do
    sleep 0.015; kill -CONT "$pid" 2>/dev/null; sleep 0.005
  done ) &
pulser=$!
trap 'kill "$pulser" 2>/dev/null; kill -CONT "$pid" 2>/dev/null; kill -TERM "$pid" 2>/dev/null' TERM INT
wait "$pid"
rc=$?
kill "$pulser" 2>/dev/null
wait "$pulser" 2>/dev/null
kill -CONT "$pid" 2>/dev/null
exit "$rc"
"#;

/// Generous: four ranks and a wrapper on two cores, two rounds of two groups.
const LIMIT: Duration = Duration::from_secs(240);

fn wrapper(dir: &Path) -> String {
    let path = dir.join("slow-node.sh");
    fs::write(&path, SLOW_NODE_WRAPPER).unwrap();
    let _ = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status();
    path.to_str().unwrap().to_string()
}

#[test]
fn bisect_under_slurm_names_the_throttled_node_in_two_rounds() {
    let _guard = common::serial();
    let Some(conf) = cluster_of(&["n1", "n2", "n3", "n4"]) else {
        return;
    };
    let (tmp, dir) = common::tempdir();
    let out = dir.join("bisect");
    let wrap = wrapper(tmp.path());
    let args = [
        "sweep",
        "--no-progress",
        "--bisect",
        "--op",
        "allgather",
        "-b",
        "32M",
        "-e",
        "32M",
        "--iters",
        "5",
        "--warmup",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    let name = format!("cb-bisect-{}", std::process::id());
    let srun_args = ["-N", "4", "-w", "n1,n2,n3,n4", "--ntasks-per-node=1"];
    let run = srun_through(&conf, &srun_args, &[wrap.as_str(), "n4"], &args, &name)
        .finish(Instant::now(), LIMIT);
    assert_eq!(run.code(), 0, "{run:?}");
    let notes: Vec<&str> = (run.stdout.lines())
        .filter(|l| l.starts_with("# note: bisect"))
        .collect();
    eprintln!("{}", notes.join("\n"));
    let m = common::meta(&out);
    assert_eq!(m.hosts, ["n1", "n2", "n3", "n4"], "{m:?}");
    let b = m.bisect.unwrap();
    assert_eq!(
        (b.verdict.as_str(), b.nodes.clone()),
        ("slow-node", vec![3]),
        "{notes:?}"
    );
    let groups: Vec<Vec<Vec<usize>>> = b.rounds.iter().map(|r| r.groups.clone()).collect();
    assert_eq!(
        groups,
        [vec![vec![0, 1], vec![2, 3]], vec![vec![2, 0], vec![3, 0]]]
    );
}
