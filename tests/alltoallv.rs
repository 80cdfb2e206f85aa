//! `collbench sweep --op alltoallv` end to end on the host backend: real rank processes, every
//! traffic form, sizes as nccl-tests defines them, exact results, the pattern recorded per
//! point, nccl-tests' variables read, bad matrices refused, and the nccl-tests table imported
//! back as the same points.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use collbench::model::record::PointRecord;
use common::imports::{import, ok, path, sorted_dirs};
use common::{command, run, summary, sweep_ok, Spawned};

const LIMIT: Duration = Duration::from_secs(120);

/// nccl-tests' own 3-rank example (src/alltoallv.cu): aligned to 16 bytes, rank 2 sends 624 B,
/// the most any rank sends or receives.
const EXAMPLE: &str = "100  200  150\n50   100  75\n300  150  200\n";

fn sweep(args: &[&str], out: &Path) -> (Vec<PointRecord>, String) {
    let r = sweep_ok(args, out, LIMIT);
    (summary(out), r.stdout)
}

#[test]
fn a_matrix_fixes_one_point_sized_by_its_busiest_rank() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("traffic.txt");
    std::fs::write(&m, EXAMPLE).unwrap();
    let spec = format!("matrix={},scale=2", m.display());
    let args = [
        "--op",
        "alltoallv",
        "--ranks",
        "3",
        "--traffic",
        &spec,
        "-b",
        "1K",
    ];
    let (points, stdout) = sweep(
        &[&args[..], &["-e", "1M", "-n", "20"]].concat(),
        &tmp.path().join("r"),
    );
    // Doubled: [192 400 288; 96 192 144; 592 288 400] after rounding; rank 2 sends 1280 B.
    assert_eq!(points.len(), 1, "{points:?}");
    let p = &points[0];
    assert_eq!((p.key.bytes, p.key.count, p.wrong), (1280, 0, 0));
    let label = p.key.traffic.as_deref().unwrap();
    assert!(label.starts_with("matrix traffic.txt x2 #"), "{label}");
    assert!(stdout.contains("the matrix fixes the size"), "{stdout}");
    let busbw = p.key.bytes as f64 / 1e3 / p.time_us_median * 2.0 / 3.0;
    assert!((p.busbw_gbps - busbw).abs() <= 1e-9 * busbw, "{p:?}");
}

#[test]
fn every_sweeping_pattern_is_exact_at_every_world_and_recorded() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let fractions = tmp.path().join("shares.csv");
    std::fs::write(&fractions, "0,0.5,0.5\n0.25,0.25,0.5\n1,0,0\n").unwrap();
    let specs = [
        ("uniform", "uniform"),
        ("spread=0.5", "spread 0.5"),
        (
            "moe=256:2:2:1.5:3",
            "moe tokens 256 experts 2 top_k 2 zipf 1.5 seed 3",
        ),
    ];
    for (i, (spec, label)) in specs.iter().enumerate() {
        let out = tmp.path().join(format!("r{i}"));
        #[rustfmt::skip]
        let args = ["--op", "alltoallv", "--ranks", "4", "--world-sizes", "2,3,4", "--traffic",
            spec, "-b", "1K", "-e", "256K", "-f", "16", "-n", "5", "--in-place", "both"];
        let (points, _) = sweep(&args, &out);
        // 3 sizes × 3 worlds × 2 placements.
        assert_eq!(points.len(), 18, "{spec}: {points:?}");
        for p in &points {
            assert_eq!(p.wrong, 0, "{spec}: {p:?}");
            assert_eq!(p.key.traffic.as_deref(), Some(*label));
            // The per-rank total: nccl-tests' per-peer count (16-byte chunks) times p.
            let w = p.key.world;
            assert_eq!(p.key.count % (4 * w), 0, "{p:?}");
            if *spec == "uniform" {
                assert_eq!(p.key.bytes, p.key.count * 4, "{p:?}");
            }
        }
    }
    // A fractions file describes exactly its ranks: the other worlds are skipped, said so.
    let spec = format!("fractions={}", fractions.display());
    #[rustfmt::skip]
    let args = ["--op", "alltoallv", "--ranks", "3", "--world-sizes", "2,3", "--traffic", &spec,
        "-b", "4K", "-e", "4K", "-n", "5"];
    let (points, stdout) = sweep(&args, &tmp.path().join("f"));
    assert_eq!(points.len(), 1, "{points:?}");
    // T = 4080 B (340 floats per peer); rank 0 receives a quarter of rank 1's (1020 → 1008 B)
    // and all of rank 2's (4080 B): 5088 B, more than any rank sends.
    assert_eq!((points[0].key.world, points[0].key.bytes), (3, 5088));
    assert!(
        stdout.contains("at world 2: the fractions describe 3 ranks"),
        "{stdout}"
    );
}

#[test]
fn nccl_tests_variables_set_the_traffic_as_alltoallv_perf_reads_them() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    #[rustfmt::skip]
    let args = ["sweep", "--no-progress", "--op", "alltoallv", "--ranks", "2", "-b", "1K",
        "-e", "1K", "-n", "5", "--out", path(&out)];
    let mut cmd = command(&args);
    cmd.env("NCCL_TESTS_ALLTOALLV_SPREAD", "0.0");
    let r = Spawned::start(cmd).finish(Instant::now(), LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    assert_eq!(summary(&out)[0].key.traffic.as_deref(), Some("uniform"));
    // nccl-tests clamps 1.5 to 1; a typo should not pass.
    let mut cmd = command(&args[..args.len() - 2]);
    cmd.env("NCCL_TESTS_ALLTOALLV_SPREAD", "1.5");
    let r = Spawned::start(cmd).finish(Instant::now(), LIMIT);
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("NCCL_TESTS") || r.stderr.contains("nccl-tests' variables"));
}

#[test]
fn bad_traffic_is_refused_in_one_line_before_any_rank_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        ("-1 16\n16 16\n", "row 1, column 1"),
        ("16 nan\n16 16\n", "row 1, column 2"),
        ("16 16\n16\n", "row 2 has 1 values"),
        ("0 0\n0 0\n", "every cell is 0"),
    ];
    for (i, (text, says)) in cases.iter().enumerate() {
        let m = tmp.path().join(format!("m{i}.txt"));
        std::fs::write(&m, text).unwrap();
        let spec = format!("matrix={}", m.display());
        let r = run(
            &[
                "sweep",
                "--op",
                "alltoallv",
                "--ranks",
                "2",
                "--traffic",
                &spec,
            ],
            LIMIT,
        );
        assert_eq!(r.code(), 2, "{text:?}: {r:?}");
        assert!(r.stderr.contains(says), "{text:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    }
    let r = run(
        &["sweep", "--op", "allreduce", "--traffic", "uniform"],
        LIMIT,
    );
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("add alltoallv to --op"), "{}", r.stderr);
}

#[test]
fn the_nccl_tests_table_of_alltoallv_imports_back_as_the_same_points() {
    let _serial = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    #[rustfmt::skip]
    let args = ["--op", "alltoallv", "--ranks", "3", "--world-sizes", "2,3", "--traffic",
        "spread", "-b", "1K", "-e", "64K", "-f", "8", "-n", "5", "--format", "nccl-tests"];
    let r = sweep_ok(&args, &out, LIMIT);
    assert!(r
        .stdout
        .contains("# Collective test starting: alltoallv_perf"));
    let text = tmp.path().join("alltoallv_perf.log");
    std::fs::write(&text, r.stdout.as_bytes()).unwrap();
    let back = tmp.path().join("imported");
    ok(import(&["nccl-tests", path(&text), "--out", path(&back)]));
    let key = |p: &PointRecord| (p.key.world, p.key.bytes, p.key.count, p.key.in_place);
    let mut imported: Vec<_> = sorted_dirs(&back)
        .iter()
        .flat_map(|d| {
            let m = common::meta(d);
            assert_eq!(m.import.as_ref().map(|i| i.bandwidth_mismatches), Some(0));
            summary(d)
        })
        .map(|p| key(&p))
        .collect();
    let mut measured: Vec<_> = summary(&out).iter().map(key).collect();
    imported.sort();
    measured.sort();
    assert_eq!(imported, measured);
}
