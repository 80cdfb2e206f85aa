//! nccl-tests `-I 1` (per-iteration CUDA event timing, 2.19+) imported from a real run
//! (tests/data/import, an RTX 4090 with nccl-tests 2.20.0): the JSON's `times_us` become
//! samples.csv rows and the summary's spread, the printed `i_min i_max i_p99 i_cv%` columns the
//! spread where no samples exist; the mean stays nccl-tests' loop average. Near-valid lists
//! are refused in one line.

mod common;

use std::fs;

use collbench::report::samples_csv::read_samples;
use common::imports::{data, import, ok, path};
use common::{meta, summary};

const JSON: &str = "nccl-tests/all_reduce_v2.20.0_per_iter_I1_rtx4090.json";
const LOG: &str = "nccl-tests/all_reduce_v2.20.0_per_iter_I1_rtx4090.log";

/// The out-of-place `times_us` of the run, as its JSON lists them.
const OUT_OF_PLACE: [f64; 30] = [
    3.776, 2.048, 3.072, 3.072, 2.048, 3.072, 3.072, 2.048, 3.072, 2.048, 3.072, 3.072, 2.176,
    2.944, 3.072, 2.048, 3.072, 3.072, 2.048, 3.072, 3.072, 2.048, 3.072, 2.4, 2.72, 3.072, 2.336,
    2.784, 3.072, 2.336,
];

#[test]
fn the_json_per_iteration_times_become_samples_and_the_spread() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ar");
    ok(import(&["nccl-tests", &data(JSON), "--out", path(&out)]));
    let info = meta(&out).import.unwrap();
    assert!(info.per_iteration_samples);
    let points = summary(&out);
    assert_eq!(points.len(), 2);
    let (oop, ip) = (&points[0], &points[1]);
    assert!(!oop.key.in_place && ip.key.in_place);
    // The mean is nccl-tests' loop average; the spread is its events'.
    assert_eq!((oop.time_us_mean, ip.time_us_mean), (2.904933, 1.372467));
    assert_eq!((oop.time_us_min, oop.time_us_max), (2.048, 3.776));
    assert_eq!((ip.time_us_min, ip.time_us_max), (1.024, 2.048));
    assert_eq!((oop.time_us_median, ip.time_us_median), (3.072, 1.024));
    assert_eq!(oop.iters, 30);
    let samples = read_samples(&out.join("samples.csv")).unwrap();
    let times: Vec<f64> = samples
        .iter()
        .filter(|(p, _)| *p == 0)
        .map(|(_, s)| s.time_us)
        .collect();
    assert_eq!(times, OUT_OF_PLACE);
    assert_eq!(samples.len(), 60);
    // One process: it is the slowest and the fastest.
    assert!(samples
        .iter()
        .all(|(_, s)| s.slowest_rank == 0 && s.fastest_us == s.time_us));
}

#[test]
fn the_printed_per_iteration_columns_give_the_spread_without_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ar");
    ok(import(&["nccl-tests", &data(LOG), "--out", path(&out)]));
    assert!(!meta(&out).import.unwrap().per_iteration_samples);
    let points = summary(&out);
    assert_eq!(points.len(), 2);
    // `2.90 0.35 0.00 0 2.05 3.78 3.78 17.54 | 1.37 0.75 0.00 0 1.02 2.05 2.05 33.33`
    let (oop, ip) = (&points[0], &points[1]);
    assert_eq!(oop.time_us_mean, 2.90);
    let spread =
        |p: &collbench::model::record::PointRecord| (p.time_us_min, p.time_us_max, p.time_us_p99);
    assert_eq!(spread(oop), (2.05, 3.78, 3.78));
    assert_eq!(spread(ip), (1.02, 2.05, 2.05));
    assert!((oop.time_cv - 0.1754).abs() < 1e-12 && (ip.time_cv - 0.3333).abs() < 1e-12);
    assert!(oop.time_us_median.is_nan(), "the table prints no median");
}

#[test]
fn near_valid_per_iteration_lists_are_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(data(JSON)).unwrap();
    let first = "\"times_us\": [\n          3.776,";
    assert!(text.contains(first));
    let with = |t: &str| text.replacen(first, &format!("\"times_us\": [{t},"), 1);
    let cases = [
        (with("\"3.776\""), "times_us[0] = \"3.776\""),
        (with("-3.776"), "times_us[0] = -3.776"),
        (with("0"), "times_us[0] = 0"),
        (with("null"), "times_us[0] = null"),
        (
            text.replacen("\"times_us\": [", "\"times_us\": 5, \"x\": [", 1),
            "times_us is not a list",
        ),
        (
            text.replacen(
                "\"cv_pct\": 17.543654,",
                "\"cv_pct\": 17.543654, \"per_process_max_times_us\": [[1.0, 2.0]],",
                1,
            ),
            "per_process_max_times_us[0] has 2 times, times_us 30",
        ),
    ];
    for (i, (bad, want)) in cases.iter().enumerate() {
        let file = tmp.path().join(format!("bad-{i}.json"));
        fs::write(&file, bad).unwrap();
        let out = tmp.path().join(format!("out-{i}"));
        let r = import(&["nccl-tests", path(&file), "--out", path(&out)]);
        assert_eq!(r.code(), 2, "{want}: {r:?}");
        let lines: Vec<&str> = r.stderr.trim().lines().collect();
        assert_eq!(lines.len(), 1, "{r:?}");
        assert!(lines[0].contains(want), "{want}: {}", lines[0]);
        assert!(!out.exists(), "nothing written for a refused log");
    }
}
