use super::*;
use crate::report::summary_csv::tests::awkward_record;

/// [`compare`] of points without samples (as imported logs hold) under `threshold` and the
/// default floor and level.
fn cmp(a: &[PointRecord], b: &[PointRecord], threshold: f64) -> Comparison {
    let pts = |r: &[PointRecord]| -> Vec<MeasuredPoint> {
        (r.iter())
            .map(|r| MeasuredPoint {
                record: r.clone(),
                samples: Vec::new(),
            })
            .collect()
    };
    compare(&pts(a), &pts(b), &rule(threshold))
}

fn rule(threshold: f64) -> Rule {
    Rule {
        threshold,
        min_diff_us: 0.1,
        alpha: 0.01,
    }
}

/// A point with `samples` (µs) as its per-iteration times and their median as its time.
fn sampled(bytes: usize, samples: &[f64]) -> MeasuredPoint {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    MeasuredPoint::with_times(rec(bytes, crate::stats::median(&sorted), 0), samples)
}

#[test]
fn a_difference_within_noise_is_not_a_regression() {
    // The report's case: 0.27 -> 0.31 us at 1 KiB is +15% but 0.04 us, below the 0.1 us floor.
    let a = sampled(1024, &[0.27; 20]);
    let b = sampled(1024, &[0.31; 20]);
    let c = compare(&[a], &[b], &rule(0.05));
    assert_eq!(c.points[0].status, Status::Same);
    // +20% in the medians, but the two runs' samples overlap: the rank test cannot tell them
    // apart (p well above 0.01), so no regression.
    let a: Vec<f64> = (0..30).map(|i| 10.0 + f64::from(i % 10)).collect();
    let b: Vec<f64> = (0..30).map(|i| 11.0 + f64::from((i * 7) % 10)).collect();
    let c = compare(&[sampled(8, &a)], &[sampled(8, &b)], &rule(0.05));
    let p = &c.points[0];
    assert!(p.time_ratio.unwrap() > 1.05, "{p:?}");
    assert!(p.p_value.unwrap() > 0.01, "{p:?}");
    assert_eq!(p.status, Status::Same);
    // A clean shift of the whole distribution is one.
    let shifted: Vec<f64> = a.iter().map(|t| t * 1.3).collect();
    let c = compare(&[sampled(8, &a)], &[sampled(8, &shifted)], &rule(0.05));
    let p = &c.points[0];
    assert!(p.p_value.unwrap() < 1e-3, "{p:?}");
    assert_eq!((p.status, c.regressions), (Status::Regression, 1));
    let c = compare(&[sampled(8, &shifted)], &[sampled(8, &a)], &rule(0.05));
    assert_eq!(c.points[0].status, Status::Faster);
}

#[test]
fn points_of_different_reductions_do_not_match() {
    let a = rec(8, 10.0, 0);
    let mut b = a.clone();
    b.key.redop = ReduceOp::Prod;
    let c = cmp(&[a.clone(), b.clone()], &[b, a], 0.05);
    assert_eq!(c.points.len(), 2);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    assert!(
        c.points.iter().any(|p| p.label.contains("/prod w")),
        "{:?}",
        c.points
    );
}

fn rec(bytes: usize, time: f64, wrong: u64) -> PointRecord {
    let mut r = awkward_record();
    r.key.bytes = bytes;
    r.key.in_place = false;
    r.time_us_median = time;
    r.busbw_gbps = bytes as f64 / time / 1e3;
    r.wrong = wrong;
    r
}

#[test]
fn matches_points_and_flags_beyond_the_threshold() {
    let a = vec![
        rec(8, 10.0, 0),
        rec(16, 10.0, 0),
        rec(32, 10.0, 0),
        rec(64, 10.0, 0),
    ];
    let b = vec![
        rec(8, 10.4, 0),  // +4%: same
        rec(16, 10.6, 0), // +6%: regression
        rec(32, 9.0, 0),  // -10%: faster
        rec(128, 1.0, 0), // only in B
    ];
    let c = cmp(&a, &b, 0.05);
    let st: Vec<Status> = c.points.iter().map(|p| p.status).collect();
    assert_eq!(st, [Status::Same, Status::Regression, Status::Faster]);
    assert_eq!((c.regressions, c.faster), (1, 1));
    assert_eq!(c.only_in_a.len(), 1);
    assert!(c.only_in_a[0].ends_with("64 B"), "{:?}", c.only_in_a);
    assert!(c.only_in_b[0].ends_with("128 B"), "{:?}", c.only_in_b);
    let p = &c.points[1];
    assert!((p.time_ratio.unwrap() - 1.06).abs() < 1e-12);
    assert!((p.busbw_ratio.unwrap() - 1.0 / 1.06).abs() < 1e-12);
}

#[test]
fn wrong_results_in_b_are_a_regression_and_duplicates_are_noted() {
    let a = vec![rec(8, 10.0, 0), rec(8, 11.0, 0)];
    let b = vec![rec(8, 10.0, 3)];
    let c = cmp(&a, &b, 0.05);
    assert_eq!(c.points[0].status, Status::Wrong);
    assert_eq!(c.regressions, 1);
    assert_eq!(c.points[0].time_us_a, 10.0);
    assert!(c.notes[0].contains("twice"), "{:?}", c.notes);
    // Neither a median nor a mean: undefined (a side with only a mean is compared on means).
    let mut undefined = rec(8, f64::NAN, 0);
    undefined.time_us_mean = f64::NAN;
    let c = cmp(&[undefined], &[rec(8, 1.0, 0)], 0.05);
    assert_eq!((c.points[0].status, c.regressions), (Status::Undefined, 0));
}

#[test]
fn an_imported_nccl_tests_point_is_compared_on_loop_times_where_both_sides_have_them() {
    // A: an nccl-tests log (mean = its loop time, no median); B: a collbench run.
    let mut a = rec(1 << 20, f64::NAN, 0);
    (a.time_us_mean, a.loop_time_us) = (100.0, Some(100.0));
    let mut b = rec(1 << 20, 90.0, 0);
    b.loop_time_us = Some(110.0);
    let c = cmp(std::slice::from_ref(&a), std::slice::from_ref(&b), 0.05);
    let p = &c.points[0];
    assert_eq!((p.time_us_a, p.time_us_b), (100.0, 110.0));
    assert_eq!(p.time_ratio, Some(1.1));
    assert_eq!(p.status, Status::Regression);
    assert_eq!(p.busbw_gbps_b, b.loop_busbw_gbps().unwrap());
    // Without B's loop time, the means, as before.
    b.loop_time_us = None;
    let c = cmp(&[a], &[b.clone()], 0.05);
    assert_eq!(c.points[0].time_us_b, b.time_us_mean);
}

#[test]
fn a_side_without_medians_is_compared_on_means() {
    let a = rec(1 << 20, 10.0, 0);
    let mut b = rec(1 << 20, f64::NAN, 0);
    b.time_us_mean = 12.0;
    b.busbw_gbps_mean = 1.0;
    let c = cmp(std::slice::from_ref(&a), &[b], 0.05);
    let p = &c.points[0];
    assert_eq!((p.time_us_a, p.time_us_b), (a.time_us_mean, 12.0));
    assert_eq!(p.busbw_gbps_b, 1.0);
    assert_eq!(p.time_ratio, Some(12.0 / a.time_us_mean));
}

#[test]
fn points_match_only_on_the_same_communicator_setup() {
    use crate::model::call::Register;
    let local = CommSetup {
        register: Some(Register::Local),
        ..Default::default()
    };
    let a = vec![rec(1 << 20, 10.0, 0), rec(1 << 20, 5.0, 0).with_comm(local)];
    let b = vec![rec(1 << 20, 10.0, 0).with_comm(local)];
    let c = cmp(&a, &b, 0.05);
    assert_eq!(c.points.len(), 1);
    assert_eq!(
        c.points[0].status,
        Status::Regression,
        "local: 5 us against 10 us"
    );
    assert_eq!(
        c.points[0].label,
        "reducescatter ring bf16/max w3 1 MiB register local"
    );
    assert_eq!(c.only_in_a, ["reducescatter ring bf16/max w3 1 MiB"]);
}

#[test]
fn points_match_on_their_protocol_only() {
    let with = |proto: Option<Proto>, time: f64| {
        let mut r = rec(1 << 20, time, 0);
        r.key.proto = proto;
        r
    };
    let a = vec![
        with(Some(Proto::Ll), 10.0),
        with(Some(Proto::Ll128), 10.0),
        with(Some(Proto::Simple), 10.0),
    ];
    // B's LL is 10% slower and its LL128 as fast; it measured Auto instead of Simple.
    let b = vec![
        with(Some(Proto::Ll128), 10.0),
        with(Some(Proto::Ll), 11.0),
        with(Some(Proto::Auto), 1.0),
    ];
    let c = cmp(&a, &b, 0.05);
    let got: Vec<(Option<Proto>, Status)> = c.points.iter().map(|p| (p.proto, p.status)).collect();
    assert_eq!(
        got,
        [
            (Some(Proto::Ll), Status::Regression),
            (Some(Proto::Ll128), Status::Same)
        ]
    );
    assert_eq!(c.points[0].label, "reducescatter ring/ll bf16/max w3 1 MiB");
    assert_eq!(c.only_in_a, ["reducescatter ring/simple bf16/max w3 1 MiB"]);
    assert_eq!(c.only_in_b, ["reducescatter ring/auto bf16/max w3 1 MiB"]);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    // A point without a protocol matches one that left it to the library, not a forced one.
    let c = cmp(&[with(None, 10.0)], &[with(Some(Proto::Auto), 10.0)], 0.05);
    assert_eq!(c.points.len(), 1);
    let c = cmp(&[with(None, 10.0)], &[with(Some(Proto::Ll), 10.0)], 0.05);
    assert!(c.points.is_empty());
    assert_eq!(c.only_in_a, ["reducescatter ring bf16/max w3 1 MiB"]);
    let json = serde_json::to_value(cmp(&a[..1], &a[..1], 0.05)).unwrap();
    assert_eq!(json["points"][0]["proto"], "ll");
    let json = serde_json::to_value(cmp(&[rec(8, 1.0, 0)], &[rec(8, 1.0, 0)], 0.05));
    assert!(json.unwrap()["points"][0].get("proto").is_none());
}

#[test]
fn alltoallv_points_match_on_their_traffic_and_a_log_without_one_as_nccl_tests_default() {
    let with = |traffic: Option<&str>| {
        let mut r = rec(1 << 20, 10.0, 0);
        r.key.traffic = traffic.map(str::to_string);
        r
    };
    let c = cmp(&[with(Some("uniform"))], &[with(Some("spread 0.5"))], 0.05);
    assert!(c.points.is_empty());
    assert_eq!(
        c.only_in_a,
        ["reducescatter ring bf16/max w3 1 MiB traffic uniform"]
    );
    // An nccl-tests alltoallv_perf log (no traffic) against a sweep of its default spread.
    let c = cmp(&[with(None)], &[with(Some("spread 1"))], 0.05);
    assert_eq!(c.points.len(), 1);
}

#[test]
fn calls_beside_others_match_only_their_like() {
    let alone = rec(8, 10.0, 0);
    let with = |c: &str, g: Option<&str>| {
        let mut r = rec(8, 20.0, 0);
        r.key.concurrent = Some(c.to_string());
        r.key.group = g.map(str::to_string);
        r
    };
    let a = [
        alone.clone(),
        with("compute memory", None),
        with("split %2 of 4", Some("0 2")),
        with("split %2 of 8", Some("0 2")),
    ];
    let c = cmp(&a, &a, 0.05);
    assert_eq!(c.points.len(), 4, "{:?}", c.points);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    assert!(c.points.iter().all(|p| p.status == Status::Same));
    let labels: Vec<&str> = c.points.iter().map(|p| p.label.as_str()).collect();
    assert!(
        labels.iter().any(|l| l.ends_with(" with compute memory")),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.ends_with(" group 0 2 with split %2 of 8")),
        "{labels:?}"
    );
}
