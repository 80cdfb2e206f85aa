//! The MPI backend (cargo feature `mpi`): the real binary started by `mpirun` at 2 and 4 ranks
//! (oversubscribed, allowed as root) measures every op and dtype it supports exactly, and the
//! requests it cannot serve are refused with one line and exit 2.
//!
//! Run with `cargo test --release --features mpi --test mpi`; needs Open MPI's `mpirun`.

#![cfg(feature = "mpi")]

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mpirun::PMI_VARS;
use common::{command, exe, tempdir, Run, Spawned};

const LIMIT: Duration = Duration::from_secs(240);

/// `mpirun -np n collbench sweep --backend mpi ...` (see [`common::mpirun::sweep`]).
fn mpirun(n: usize, out: &Path, args: &[&str]) -> Run {
    common::mpirun::sweep(n, out, args, LIMIT)
}

/// Every dtype.
const DTYPES: [&str; 5] = ["f32", "f64", "i32", "f16", "bf16"];

/// Every op in every dtype, out of place and in place, at the given world sizes with the
/// reduction `redop`; every row exact and from `mpi`.
fn exact_sweep(n: usize, worlds: &str, expected_worlds: &[usize], redop: &str) {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let ops = "allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv,gather,scatter";
    let args = [
        "--op",
        ops,
        "--dtype",
        &DTYPES.join(","),
        "--redop",
        redop,
        "--world-sizes",
        worlds,
        "--in-place",
        "both",
        "-b",
        "8",
        "-e",
        "64K",
        "-f",
        "16",
        "--iters",
        "3",
        "--warmup",
        "1",
    ];
    let r = mpirun(n, &out, &args);
    assert_eq!(r.code(), 0, "{r:?}");
    let rows = common::summary(&out);
    for &w in expected_worlds {
        for op in ops.split(',') {
            for (dtype, in_place) in DTYPES.iter().flat_map(placements) {
                let found = rows.iter().filter(|p| {
                    let k = &p.key;
                    k.world == w
                        && k.op.name() == op
                        && k.dtype.name() == dtype
                        && k.in_place == in_place
                });
                let placed = if in_place { "in place" } else { "out of place" };
                assert!(
                    found.count() >= 3,
                    "no rows for {op} {dtype} {placed} world {w}"
                );
            }
        }
    }
    for p in &rows {
        assert_eq!(p.key.backend, "mpi");
        assert_eq!(p.key.algo.name(), "auto");
        assert_eq!(p.wrong, 0, "{:?}", p.key);
        assert!(p.time_us_median > 0.0, "{:?}", p.key);
    }
    let meta = common::meta(&out);
    assert_eq!((meta.backend.as_str(), meta.ranks), ("mpi", n));
    let library = meta.library.unwrap_or_default();
    assert!(library.contains("MPI"), "library {library:?}");
}

/// `dtype` out of place and in place.
fn placements<'a>(dtype: &&'a str) -> [(&'a str, bool); 2] {
    [(dtype, false), (dtype, true)]
}

#[test]
fn two_ranks_measure_every_op_and_dtype_exactly() {
    exact_sweep(2, "2", &[2], "sum");
}

#[test]
fn four_ranks_split_into_groups_of_two_three_and_four() {
    exact_sweep(4, "2,3,4", &[2, 3, 4], "sum");
}

/// Max and min, the user operations of f16 and bf16 included.
#[test]
fn max_and_min_are_exact_at_two_and_four_ranks() {
    for (n, redop) in [(2, "max"), (4, "min")] {
        exact_sweep(n, &n.to_string(), &[n], redop);
    }
}

/// The 1- and 8-byte integer types (MPI's own) and fp8 (user operations on the host's
/// kernels), with prod and max, at 3 ranks: every point exact, every pair measured.
#[test]
fn new_types_with_prod_and_max_are_exact_at_three_ranks() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let dtypes = "i8,u8,u32,i64,u64,f8e4m3,f8e5m2";
    #[rustfmt::skip]
    let args = [
        "--op", "allreduce,reducescatter,reduce,allgather", "--dtype", dtypes,
        "--redop", "prod,max", "--in-place", "both", "-b", "8", "-e", "64K", "-f", "16",
        "--iters", "3", "--warmup", "1",
    ];
    let r = mpirun(3, &out, &args);
    assert_eq!(r.code(), 0, "{r:?}");
    let rows = common::summary(&out);
    assert!(rows.iter().all(|p| p.wrong == 0), "{rows:?}");
    let reducing = rows.iter().filter(|p| p.key.op.reduces());
    let reduced: BTreeSet<String> = reducing
        .map(|p| format!("{} {}", p.key.dtype, p.key.redop))
        .collect();
    let want = dtypes
        .split(',')
        .flat_map(|d| [d.to_owned() + " prod", d.to_owned() + " max"]);
    assert_eq!(reduced, want.collect());
}

/// `collbench sweep args...` run directly, with no launcher in its environment.
fn direct(args: &[&str], env: Option<(&str, &str)>) -> Run {
    let (_tmp, out) = tempdir();
    let mut full = vec!["sweep", "--backend", "mpi", "--out", out.to_str().unwrap()];
    full.extend_from_slice(args);
    let mut cmd = command(&full);
    for var in PMI_VARS {
        cmd.env_remove(var);
    }
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let r = Spawned::start(cmd).finish(Instant::now(), Duration::from_secs(30));
    assert!(!out.exists(), "a refused run left {}", out.display());
    r
}

fn assert_refused(r: &Run, names: &[&str]) {
    assert_eq!((r.code(), r.stderr_lines().len()), (2, 1), "{r:?}");
    for name in names {
        assert!(r.stderr.contains(name), "{name} not in {}", r.stderr);
    }
}

#[test]
fn without_a_launcher_it_says_to_use_mpirun() {
    let r = direct(&["-e", "64"], None);
    assert_refused(&r, &["mpirun -np N collbench sweep --backend mpi"]);
}

#[test]
fn unsupported_requests_are_refused_before_mpi_starts() {
    // A launcher variable lets the refusal of the request itself through.
    let env = Some(("PMI_SIZE", "1"));
    assert_refused(
        &direct(&["--algo", "auto,ring"], env),
        &["auto,ring", "one mpirun"],
    );
    assert_refused(
        &direct(&["--redop", "sum,avg"], env),
        &[
            "--redop avg",
            "mpi backend has no such reduction",
            "sum, prod, max, min",
        ],
    );
    let rs_ring = ["--op", "reducescatter", "--algo", "ring"];
    assert_refused(
        &direct(&rs_ring, env),
        &["mpi backend", "recursive-doubling"],
    );
}

#[test]
fn a_forced_algorithm_is_set_for_open_mpi_and_recorded() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let args = [
        "--op",
        "allreduce,allgather,reducescatter",
        "--algo",
        "ring",
        "-b",
        "64",
        "-e",
        "64K",
        "-f",
        "32",
        "--iters",
        "3",
        "--warmup",
        "1",
    ];
    let r = mpirun(2, &out, &args);
    assert_eq!(r.code(), 0, "{r:?}");
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(said.contains("reducescatter has no ring"), "{said}");
    let rows = common::summary(&out);
    assert_eq!(rows.len(), 6, "allreduce and allgather at 3 sizes");
    assert!(rows
        .iter()
        .all(|p| p.key.algo.name() == "ring" && p.wrong == 0));
    let env = &common::meta(&out).options["mpi_env"];
    assert_eq!(env["OMPI_MCA_coll_tuned_use_dynamic_rules"], "1");
    assert_eq!(env["OMPI_MCA_coll_tuned_allreduce_algorithm"], "4");
    assert_eq!(env["OMPI_MCA_coll_tuned_allgather_algorithm"], "4");
}

/// Open MPI's other `coll_tuned` variants (the linear AllToAll among them), forced one per
/// launch at 4 ranks (a power of two, so none falls back to another algorithm), Bruck's AllToAll
/// also at 3 and 5 (Open MPI's modified Bruck runs at any p): exact, and the number set is
/// recorded. In place, Open MPI's AllToAll algorithms all run its basic in-place exchange
/// instead (coll_base_alltoall.c).
#[test]
fn rabenseifner_bruck_neighbor_exchange_and_recursive_halving_are_exact() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let bruck = &[("allgather", "2"), ("alltoall", "3")][..];
    // (algo, ops, coll_tuned numbers, ranks, world sizes)
    #[rustfmt::skip]
    let cases = [
        ("rabenseifner", "allreduce,reduce", &[("allreduce", "6"), ("reduce", "7")][..], 4, "4"),
        ("bruck", "allgather,alltoall", bruck, 4, "4"),
        ("bruck", "alltoall", &bruck[1..], 5, "3,5"),
        ("linear", "alltoall", &[("alltoall", "1")], 4, "4"),
        ("neighbor-exchange", "allgather", &[("allgather", "5")], 4, "4"),
        ("recursive-halving", "reducescatter", &[("reduce_scatter_block", "3")], 4, "4"),
    ];
    let _serial = common::serial();
    for (algo, ops, numbers, ranks, worlds) in cases {
        let (_tmp, out) = tempdir();
        let args = [
            "--op",
            ops,
            "--algo",
            algo,
            "--world-sizes",
            worlds,
            "--dtype",
            "f32,bf16",
            "--in-place",
            "both",
            "-b",
            "128",
            "-e",
            "1M",
            "-f",
            "64",
            "--iters",
            "3",
            "--warmup",
            "1",
        ];
        let r = mpirun(ranks, &out, &args);
        assert_eq!(r.code(), 0, "{r:?}");
        let rows = common::summary(&out);
        let n_ops = ops.split(',').count();
        let n_worlds = worlds.split(',').count();
        assert_eq!(
            rows.len(),
            n_worlds * n_ops * 2 * 2 * 3,
            "{algo}: worlds x ops x dtypes x placements x sizes"
        );
        assert!(rows
            .iter()
            .all(|p| p.key.algo.name() == algo && p.wrong == 0));
        let env = &common::meta(&out).options["mpi_env"];
        assert_eq!(env["OMPI_MCA_coll_tuned_use_dynamic_rules"], "1");
        for (name, number) in numbers {
            assert_eq!(
                env[format!("OMPI_MCA_coll_tuned_{name}_algorithm")],
                *number
            );
        }
    }
}

/// Ranks that say they run on two nodes (COLLBENCH_NODE_NAME, as on a real cluster the host
/// name would) are recorded as such: meta.json's hosts and rank nodes, each group's node count
/// in summary.csv, each rank's node in ranks.csv.
#[test]
fn ranks_on_two_named_nodes_are_recorded_per_node() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    // Ranks 0 and 1 on node n0, ranks 2 and 3 on n1: each rank names its node before exec.
    let script = format!(
        "COLLBENCH_NODE_NAME=n$((OMPI_COMM_WORLD_RANK / 2)) exec {} sweep --backend mpi \
         --no-progress --out {} --op allreduce --world-sizes 2,4 -b 8 -e 64 -f 8 --iters 3",
        exe(),
        out.display()
    );
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        "4",
        "sh",
        "-c",
    ])
    .arg(&script)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let r = Spawned::start(cmd).finish(Instant::now(), LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let m = common::meta(&out);
    assert_eq!(m.hosts, vec!["n0".to_string(), "n1".to_string()]);
    assert_eq!(m.rank_nodes, vec![0, 0, 1, 1]);
    let rows = common::summary(&out);
    assert!(!rows.is_empty());
    for p in &rows {
        let nodes = if p.key.world == 4 { 2 } else { 1 };
        assert_eq!((p.key.nodes, p.wrong), (nodes, 0), "{:?}", p.key);
    }
    let ranks = collbench::report::ranks_csv::read_ranks(&out.join("ranks.csv")).unwrap();
    for (_, r) in &ranks {
        assert_eq!(r.node, r.global_rank / 2, "{r:?}");
    }
}

#[test]
fn ctrl_c_to_mpirun_keeps_the_points_and_records_the_interruption() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "2", exe()])
        .args(["sweep", "--backend", "mpi", "--no-progress", "--out"])
        .arg(&out)
        .args(["-b", "1K", "-e", "4G", "--iters", "200"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let run = Spawned::start(cmd);
    let started = common::wait_until(LIMIT, || common::summary_rows_on_disk(&out) >= 3);
    assert!(started, "no points written");
    common::signal(run.pid(), libc::SIGINT);
    let r = run.finish(Instant::now(), common::hang_limit(Duration::from_secs(60)));
    assert!(!r.status.success(), "{r:?}");
    let m = common::meta(&out);
    assert!(
        r.stderr.contains("collbench: interrupted; "),
        "{}",
        r.stderr
    );
    assert_eq!(m.status, collbench::meta::RunStatus::Interrupted, "{m:?}");
    // Every point meta.json counts is a whole row of summary.csv, read back exactly.
    let rows = common::summary(&out);
    assert_eq!(m.points, rows.len());
    assert!(rows.len() >= 3 && rows.iter().all(|r| r.wrong == 0));
    let exe_name = exe();
    // The ranks go at once or soon after; the limit only catches ranks that never go.
    let left = common::wait_until(common::hang_limit(Duration::from_secs(10)), || {
        !std::fs::read_dir("/proc").unwrap().any(|e| {
            let cmdline = e.map(|e| e.path().join("cmdline")).ok();
            let text = cmdline
                .and_then(|p| std::fs::read(p).ok())
                .unwrap_or_default();
            let text = String::from_utf8_lossy(&text);
            text.starts_with(exe_name) && text.contains(&*out.to_string_lossy())
        })
    });
    assert!(left, "rank processes outlived mpirun");
}
