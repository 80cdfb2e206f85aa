//! `collbench sweep --format nccl-tests` prints nccl-tests' text, which nccl-tests' parsers
//! read: the round trip sweep → text → `collbench import` gives back the sweep's points (the
//! same ops, worlds, dtypes, sizes, placements and roots, the printed loop times, and no
//! bandwidth the importer finds inconsistent), and so does its `-J` JSON, with the times
//! unrounded.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::imports::{import, ok, path, sorted_dirs};
use common::{run, summary, sweep_ok};

const LIMIT: Duration = Duration::from_secs(120);

/// (op, dtype, world, bytes, count, in_place, root) of a point.
type Key = (String, String, usize, usize, usize, bool, Option<usize>);

#[test]
fn the_nccl_tests_table_imports_back_as_the_sweeps_points() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    #[rustfmt::skip]
    let args = [
        "--op", "allreduce,allgather,broadcast,reducescatter", "--ranks", "3", "--world-sizes",
        "2,3", "-d", "float,double", "-b", "8", "-e", "4K", "-f", "4", "-n", "5", "-w", "1",
        "--format", "nccl-tests", "-J",
    ];
    let json = tmp.path().join("run.json");
    let mut args = args.to_vec();
    args.push(path(&json));
    let r = sweep_ok(&args, &out, LIMIT);
    // Both halves of a size on one line: 13 fields, the in-place half's #wrong last.
    let rows: Vec<&str> = r.stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(
        rows.iter().all(|l| l.split_whitespace().count() == 13),
        "{rows:#?}"
    );
    assert!(r
        .stdout
        .contains("# Collective test starting: reduce_scatter_perf"));
    let text = tmp.path().join("table.log");
    std::fs::write(&text, r.stdout.as_bytes()).unwrap();

    let back = imported_times(&text, &tmp.path().join("imported"));
    let measured = summary(&out);
    assert_eq!(back.len(), measured.len());
    for p in &measured {
        let time = back
            .get(&key(p))
            .unwrap_or_else(|| panic!("{:?} not imported", key(p)));
        let printed = p.loop_time_us.unwrap();
        // Printed with two decimals (fewer where the number is wide).
        assert!(
            (time - printed).abs() <= 0.005 + printed * 1e-4,
            "{time} vs {printed}"
        );
    }
    // The -J file: the same points, with the times unrounded.
    let exact = imported_times(&json, &tmp.path().join("from-json"));
    let want: BTreeMap<Key, f64> = measured
        .iter()
        .map(|p| (key(p), p.loop_time_us.unwrap()))
        .collect();
    assert_eq!(exact, want);
}

/// `collbench import nccl-tests FILE` into `out`: each point's imported time, by key; every
/// folder's bandwidths consistent by the importer's own check.
fn imported_times(file: &std::path::Path, out: &std::path::Path) -> BTreeMap<Key, f64> {
    ok(import(&["nccl-tests", path(file), "--out", path(out)]));
    let mut times = BTreeMap::new();
    for dir in sorted_dirs(out) {
        let m = common::meta(&dir);
        let mismatches = m.import.as_ref().map(|i| i.bandwidth_mismatches);
        assert_eq!(mismatches, Some(0), "{dir:?}");
        times.extend(summary(&dir).iter().map(|p| (key(p), p.time_us_mean)));
    }
    times
}

fn key(p: &collbench::model::record::PointRecord) -> Key {
    let k = &p.key;
    let (op, dtype) = (k.op.to_string(), k.dtype.to_string());
    (op, dtype, k.world, k.bytes, k.count, k.in_place, k.root)
}

#[test]
fn without_the_flag_the_table_is_collbenchs() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("run");
    let r = run(
        &[
            "sweep",
            "--ranks",
            "2",
            "-b",
            "1K",
            "-e",
            "1K",
            "-n",
            "3",
            "--out",
            path(&o),
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(!r.stdout.contains("Collective test starting"));
    // --in-place stays off by default: one point per default op, none in place.
    let points = summary(&o);
    assert_eq!(points.len(), 3);
    assert!(points.iter().all(|p| !p.key.in_place));
}
