//! `collbench sweep --with-compute` end to end on the host backend: every point measured alone
//! and then with a compute load on a thread beside every rank, both exact, the call's slowdown
//! worked out from the rows themselves and the compute's recorded; refused where it cannot run.

mod common;

use std::time::Duration;

use common::{summary, sweep_ok};

const LIMIT: Duration = Duration::from_secs(300);

#[test]
fn each_kernel_runs_beside_the_calls_and_both_slowdowns_are_recorded() {
    let _serial = common::serial();
    for kind in ["memory", "cache"] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join(kind);
        #[rustfmt::skip]
        let args = ["--op", "allreduce,allgather", "--ranks", "2", "--world-sizes", "1,2",
            "--with-compute", kind, "-b", "64K", "-e", "4M", "-f", "64", "-n", "30"];
        let r = sweep_ok(&args, &out, LIMIT);
        let points = summary(&out);
        // World 1 (allreduce; allgather too) and 2, two sizes each: alone, then beside.
        assert_eq!(points.len(), 2 * 2 * 2 * 2, "{points:?}");
        let label = format!("compute {kind}");
        for pair in points.chunks(2) {
            let (alone, beside) = (&pair[0], &pair[1]);
            assert_eq!(alone.key.concurrent, None);
            assert_eq!(beside.key.concurrent.as_deref(), Some(label.as_str()));
            assert_eq!((alone.wrong, beside.wrong), (0, 0));
            assert_eq!(
                (alone.key.bytes, alone.key.world),
                (beside.key.bytes, beside.key.world)
            );
            let slowdown = beside.time_us_median / alone.time_us_median;
            let got = beside.slowdown.unwrap();
            assert!(
                (got - slowdown).abs() <= 1e-12 * slowdown,
                "{got} vs {slowdown}"
            );
            assert_eq!(
                (alone.compute_slowdown, beside.aggregate_busbw_gbps),
                (None, None)
            );
            // The load's rate is taken where it did enough work to tell one: a positive ratio.
            assert!(beside
                .compute_slowdown
                .map_or(true, |s| s > 0.0 && s.is_finite()));
        }
        // One rank on 2 cores: its load has the other core, and 4 MiB calls run long enough
        // for its rate to be taken.
        let largest = &points[3];
        assert_eq!((largest.key.world, largest.key.bytes), (1, 4 << 20));
        assert!(
            largest.compute_slowdown.is_some(),
            "{largest:?}\n{}",
            r.stdout
        );
        assert!(
            r.stdout.contains(&format!("with {label}: call x")),
            "{}",
            r.stdout
        );
    }
}

#[test]
fn with_compute_is_refused_beside_a_split_in_one_line() {
    let r = common::run(
        &[
            "sweep",
            "--ranks",
            "2",
            "--split",
            "%2",
            "--with-compute",
            "memory",
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("measured one at a time"), "{}", r.stderr);
    let r = common::run(&["sweep", "--with-compute", "gemm"], LIMIT);
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(r.stderr.contains("memory"), "{}", r.stderr);
}
