//! The two timings of every point (docs/METHODOLOGY.md, "Two timings"): nccl-tests' loop time
//! and the bandwidths it gives, beside the barrier-separated samples, and meta.json saying how
//! each was taken.

mod common;

use common::{busbw_factor, csv_rows, meta, run, summary, tempdir};

#[test]
fn every_point_has_nccl_tests_loop_time_and_meta_says_how_both_timings_were_taken() {
    let (_tmp, base) = tempdir();
    let dir = base.join("run");
    let args = [
        "sweep",
        "--no-progress",
        "--ranks",
        "3",
        "--op",
        "allreduce,allgather,broadcast",
        "-b",
        "1K",
        "-e",
        "64K",
        "-f",
        "8",
        "--iters",
        "7",
    ];
    let mut full: Vec<&str> = args.to_vec();
    let out = dir.to_str().unwrap();
    full.extend(["--out", out]);
    let r = run(&full, common::hang_limit(common::RUN_TIMEOUT));
    assert_eq!(r.code(), 0, "{r:?}");
    let rows = summary(&dir);
    assert!(rows.len() >= 9, "{rows:?}");
    let table = csv_rows(&dir.join("summary.csv"));
    for (rec, row) in rows.iter().zip(&table) {
        let t = rec.loop_time_us.expect("a loop time for every point");
        assert!(t > 0.0 && t.is_finite(), "{rec:?}");
        // nccl-tests' bandwidths from nccl-tests' time, as its table computes them.
        let algbw = rec.key.bytes as f64 / (t * 1e3);
        let busbw = algbw * busbw_factor(rec.key.op.name(), rec.key.world);
        let col = |c: &str| row[c].parse::<f64>().unwrap();
        assert!(
            (col("loop_algbw_gbps") - algbw).abs() <= 1e-9 * algbw,
            "{row:?}"
        );
        assert!(
            (col("loop_busbw_gbps") - busbw).abs() <= 1e-9 * algbw,
            "{row:?}"
        );
    }
    let m = meta(&dir);
    let timing = m.timing.expect("meta.json says how the times were taken");
    assert!(timing.loop_.starts_with("nccl-tests' loop"), "{timing:?}");
    assert!(timing.loop_.ends_with("(nccl-tests -a 1)"), "{timing:?}");
    assert!(timing.samples.contains("slowest rank"), "{timing:?}");
}

/// nccl-tests' `-m 4 -z 1 -a 3` on the host backend: every point measured and exact, and
/// meta.json's options and timing say how.
#[test]
fn aggregated_calls_and_the_slowest_ranks_loop_are_taken_and_recorded() {
    let (_tmp, base) = tempdir();
    let dir = base.join("run");
    let out = dir.to_str().unwrap();
    #[rustfmt::skip]
    let args = [
        "sweep", "--no-progress", "--ranks", "3", "--op", "allreduce,alltoall", "-b", "1K",
        "-e", "64K", "-f", "8", "--iters", "5", "-m", "4", "-z", "1", "-a", "3", "--out", out,
    ];
    let r = run(&args, common::hang_limit(common::RUN_TIMEOUT));
    assert_eq!(r.code(), 0, "{r:?}");
    let rows = summary(&dir);
    assert_eq!(rows.len(), 6, "{rows:?}");
    for rec in &rows {
        assert_eq!(rec.wrong, 0, "{rec:?}");
        assert!(rec.loop_time_us.is_some_and(|t| t > 0.0), "{rec:?}");
    }
    let m = meta(&dir);
    let lt = &m.options["loop_timing"];
    assert_eq!(
        (&lt["agg"], &lt["blocking"], &lt["rank"]),
        (&4.into(), &true.into(), &"max".into()),
        "{lt:?}"
    );
    let timing = m.timing.expect("meta.json says how the times were taken");
    assert!(
        timing.loop_.contains("4 calls (nccl-tests -m 4)"),
        "{timing:?}"
    );
    assert!(
        timing
            .loop_
            .ends_with("the largest over ranks (nccl-tests -a 3)"),
        "{timing:?}"
    );
    assert!(
        timing.samples.contains("each sample 4 calls back to back"),
        "{timing:?}"
    );
}
