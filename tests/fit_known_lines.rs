//! `collbench fit` against curves whose answer is known: nccl-tests logs (the real format,
//! imported as users import theirs) whose times lie on a line of known latency and bandwidth,
//! and the same sizes with times scattered far off any line. Unlike a live sweep, nothing here
//! depends on the machine, so the fitted numbers are held to the line's own.

mod common;

use std::path::Path;
use std::time::Duration;

use collbench::fit::schema::FitFile;
use common::run;

const LIMIT: Duration = Duration::from_secs(120);
const ALPHA_US: f64 = 5.0;
/// 10 GB/s: 1e-4 us per byte.
const US_PER_BYTE: f64 = 1e-4;

/// An all_reduce_perf log at 8 ranks, 1 KiB to 16 MiB, each time the line's times `scale(k)`.
fn nccl_tests_log(scale: impl Fn(usize) -> f64) -> String {
    let mut s = String::from(
        "# nThread 1 nGpus 8 minBytes 1024 maxBytes 16777216 step: 2(factor) warmup iters: 5 iters: 20 \
         validation: 1\n#\n# Using devices\n",
    );
    for r in 0..8 {
        s += &format!("#   Rank  {r} Pid  1000 on      hostA device  {r} [0x36] NVIDIA H100\n");
    }
    s += "#\n#                                                              out-of-place                       in-place\n\
          #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
          #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
    for (k, e) in (10..25).enumerate() {
        let bytes = 1usize << e;
        let t = (ALPHA_US + bytes as f64 * US_PER_BYTE) * scale(k);
        let alg = bytes as f64 / t / 1e3;
        let bus = alg * 2.0 * 7.0 / 8.0;
        s += &format!(
            "{bytes:12} {:12}     float     sum      -1 {t:8.2} {alg:7.2} {bus:7.2}      0 {t:8.2} {alg:7.2} {bus:7.2}      0\n",
            bytes / 4
        );
    }
    s + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n"
}

/// Imports `log` and fits it; the fit and fit's run.
fn import_and_fit(dir: &Path, log: &str) -> (FitFile, common::Run) {
    let file = dir.join("all_reduce.log");
    std::fs::write(&file, log).unwrap();
    let run_dir = dir.join("run");
    let args = [
        "import",
        "nccl-tests",
        file.to_str().unwrap(),
        "--out",
        run_dir.to_str().unwrap(),
    ];
    let r = run(&args, LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let out = dir.join("fit.json");
    let r = run(
        &[
            "fit",
            run_dir.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 0, "{r:?}");
    (FitFile::read(&out).expect("fit.json reads back"), r)
}

#[test]
fn times_on_a_line_are_fitted_to_that_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (f, r) = import_and_fit(tmp.path(), &nccl_tests_log(|_| 1.0));
    assert_eq!(
        f.curves.len(),
        2,
        "out of place and in place: {:#?}",
        f.notes
    );
    for c in &f.curves {
        assert!(!c.too_noisy, "{:?}", f.notes);
        // The log rounds times to 0.01 us: 0.2% at the smallest size, nothing at the largest.
        let alpha = c.line.alpha_us.value;
        assert!((alpha - ALPHA_US).abs() < 0.01 * ALPHA_US, "alpha {alpha}");
        let bw = c.line.bandwidth_gbps.unwrap();
        assert!((bw - 10.0).abs() < 0.01 * 10.0, "bandwidth {bw} GB/s");
        assert!(c.line.quality.r2 > 0.9999, "{:?}", c.line.quality);
        assert_eq!(c.sizes, 15);
    }
    assert!(!r.stderr.contains("too noisy"), "{}", r.stderr);
}

#[test]
fn times_far_off_any_line_are_flagged_too_noisy() {
    let tmp = tempfile::tempdir().unwrap();
    let scatter = [1.0, 6.0, 1.0, 9.0, 1.0, 4.0];
    let (f, r) = import_and_fit(tmp.path(), &nccl_tests_log(|k| scatter[k % 6]));
    assert_eq!(f.curves.len(), 2);
    assert!(f.curves.iter().all(|c| c.too_noisy), "{:#?}", f.notes);
    assert!(
        r.stderr.contains("2 of 2 curves are too noisy"),
        "{}",
        r.stderr
    );
    // An imported log cannot be measured again: the advice says what can be done instead.
    assert!(!r.stderr.contains("more --iters"), "{}", r.stderr);
}
