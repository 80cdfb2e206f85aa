use std::path::{Path, PathBuf};

use super::*;
use crate::accept::measure::{group, RunData};
use crate::accept::reason::Reason;
use crate::collective::{Algo, DType, Op, Proto};
use crate::model::record::{PointRecord, RankSummary};

/// An AllReduce ring f32 point at world 2 whose every time is `time_us` (µs), with the given
/// busbw.
fn rec(bytes: usize, time_us: f64, busbw: f64) -> PointRecord {
    let mut r = PointRecord::example(Op::AllReduce, bytes, 2).with_time_us(time_us);
    r.busbw_gbps = busbw;
    r.time_cv = 0.1;
    r
}

fn ranks(times: &[f64]) -> Vec<RankSummary> {
    times
        .iter()
        .enumerate()
        .map(|(rank, &t)| RankSummary {
            rank,
            global_rank: rank,
            node: 0,
            time_us_median: t,
            time_us_mean: t,
            time_us_max: t,
            wrong: 0,
        })
        .collect()
}

fn run(points: Vec<(PointRecord, Vec<RankSummary>)>) -> RunData {
    RunData {
        dir: PathBuf::from("r"),
        status: RunStatus::Complete,
        error: None,
        failure: None,
        has_ranks: true,
        hosts: vec!["h".into()],
        rank_nodes: Vec::new(),
        points,
        slowest: Vec::new(),
        stragglers: Default::default(),
    }
}

fn criteria(text: &str) -> Criteria {
    Criteria::parse(text, Path::new("/x/c.toml")).unwrap()
}

fn header() -> Header {
    Header {
        created: "2026-01-01T00:00:00Z".into(),
        command_line: vec![],
    }
}

/// Three repeats of one 1 MiB point with busbw 8, 10, 12 GB/s.
fn three_repeats() -> Measured {
    let runs = [8.0, 10.0, 12.0]
        .iter()
        .map(|&bw| run(vec![(rec(1 << 20, 100.0, bw), ranks(&[100.0, 110.0]))]))
        .collect();
    group(runs)
}

fn only_check(v: &Verdict) -> &CheckVerdict {
    &v.criteria[0].points[0].checks[0]
}

#[test]
fn the_stated_statistic_is_taken_across_repeats() {
    let m = three_repeats();
    let cases = [
        ("median", 10.0, Outcome::Pass),
        ("mean", 10.0, Outcome::Pass),
        ("min", 8.0, Outcome::Fail),
        ("max", 12.0, Outcome::Pass),
        ("worst", 8.0, Outcome::Fail),
    ];
    for (stat, want, result) in cases {
        let c = criteria(&format!(
            "[[criterion]]\nstat = \"{stat}\"\nmin_busbw_gbps = 9.0\n"
        ));
        let v = judge(&c, &m, header());
        let chk = only_check(&v);
        assert_eq!(chk.values, vec![8.0, 10.0, 12.0]);
        assert_eq!((chk.measured, chk.result), (Some(want), result), "{stat}");
        let margin = (want - 9.0) / 9.0 * 100.0;
        assert!((chk.margin_pct.unwrap() - margin).abs() < 1e-9);
        assert_eq!(v.exit_code, if result == Outcome::Pass { 0 } else { 1 });
    }
}

#[test]
fn worst_is_the_highest_for_a_ceiling() {
    let c = criteria("[[criterion]]\nstat = \"worst\"\nmax_rank_skew = 0.2\n");
    let v = judge(&c, &three_repeats(), header());
    let chk = only_check(&v);
    assert!((chk.measured.unwrap() - 0.1).abs() < 1e-12, "{chk:?}");
    assert_eq!(chk.result, Outcome::Pass);
    let p = &v.criteria[0].points[0];
    let slow = p.slow_rank.as_ref().unwrap();
    assert_eq!((slow.id, slow.slowest_in, slow.repeats), (1, 3, 3));
}

#[test]
fn wrong_elements_add_up_over_repeats_whatever_the_statistic() {
    let mut runs: Vec<RunData> = (0..3)
        .map(|_| run(vec![(rec(8, 1.0, 0.01), vec![])]))
        .collect();
    runs[1].points[0].0.wrong = 4;
    let c = criteria("[[criterion]]\nmax_wrong = 0\n");
    let v = judge(&c, &group(runs), header());
    let chk = only_check(&v);
    assert_eq!((chk.measured, chk.result), (Some(4.0), Outcome::Fail));
    assert_eq!(chk.margin_pct, None);
}

#[test]
fn a_criterion_matching_nothing_is_no_data_and_exit_2() {
    let c = criteria(
        "[[criterion]]\nname = \"big\"\nmin_bytes = \"1G\"\nmin_busbw_gbps = 1\n\
         [[criterion]]\nmax_cv = 1.0\n",
    );
    let v = judge(&c, &three_repeats(), header());
    assert_eq!(v.criteria[0].result, Outcome::NoData);
    assert!(v.criteria[0].points.is_empty());
    let note = v.criteria[0].note.as_deref().unwrap();
    assert!(
        note.contains("matched no measured point") && note.contains("1 GiB"),
        "{note}"
    );
    assert_eq!(v.criteria[1].result, Outcome::Pass);
    assert_eq!((v.result, v.exit_code), (Outcome::NoData, 2));
    assert_eq!(v.counts.criteria_no_data, 1);
}

#[test]
fn skew_without_ranks_csv_cannot_be_judged() {
    let runs = vec![run(vec![(rec(8, 1.0, 0.01), vec![])])];
    let c = criteria("[[criterion]]\nmax_rank_skew = 0.5\nmax_node_skew = 0.5\n");
    let v = judge(&c, &group(runs), header());
    let p = &v.criteria[0].points[0];
    assert!(p.checks.iter().all(|c| c.result == Outcome::NoData));
    assert!(p.checks[0].note.as_deref().unwrap().contains("ranks.csv"));
    assert_eq!(v.exit_code, 2);
}

#[test]
fn an_incomplete_run_makes_the_verdict_incomplete() {
    let mut r = run(vec![(rec(8, 1.0, 0.01), vec![])]);
    r.status = RunStatus::Failed;
    let c = criteria("[[criterion]]\nmax_cv = 1.0\n");
    let v = judge(&c, &group(vec![r]), header());
    assert_eq!(v.criteria[0].result, Outcome::Pass);
    assert_eq!((v.result, v.exit_code), (Outcome::NoData, 2));
    assert!(
        v.notes[0].contains("did not complete (status failed)"),
        "{:?}",
        v.notes
    );
    let incomplete = &v.reasons[0];
    assert_eq!(
        (incomplete.code, incomplete.count),
        (Reason::RunIncomplete, 1)
    );
    assert_eq!(incomplete.names, ["r"]);
}

#[test]
fn failed_checks_carry_their_reason_code_and_skew_names_the_rank() {
    let c = criteria(
        "[[criterion]]\nname = \"bw\"\nmin_busbw_gbps = 100.0\nmax_rank_skew = 0.05\n\
         max_cv = 1.0\n[[criterion]]\nname = \"big\"\nmin_bytes = \"1G\"\nmax_cv = 1\n",
    );
    let v = judge(&c, &three_repeats(), header());
    let p = &v.criteria[0].points[0];
    let of = |key: &str| p.checks.iter().find(|c| c.check == key).unwrap();
    assert_eq!(of("min_busbw_gbps").reason, Some(Reason::BandwidthLow));
    assert_eq!(of("max_cv").reason, None);
    let skew = of("max_rank_skew");
    assert_eq!(skew.reason, Some(Reason::RankStraggler));
    let culprit = skew.culprit.as_ref().unwrap();
    assert_eq!((culprit.kind, culprit.id), ("rank", 1));
    assert_eq!(culprit.describe(), "rank 1 (h)");
    assert!(of("min_busbw_gbps").culprit.is_none());
    let tally: Vec<_> = (v.reasons.iter())
        .map(|r| (r.code, r.count, r.criteria.clone(), r.names.clone()))
        .collect();
    let s = |x: &[&str]| x.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        tally,
        [
            (Reason::BandwidthLow, 1, s(&["bw"]), s(&[])),
            (Reason::RankStraggler, 1, s(&["bw"]), s(&["rank 1 (h)"])),
            (Reason::NoData, 1, s(&["big"]), s(&[])),
        ]
    );
    let json = serde_json::to_value(&v).unwrap();
    let chk = &json["criteria"][0]["points"][0]["checks"];
    assert!(chk
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["reason"] == "rank-straggler"));
    assert_eq!(json["reasons"][0]["code"], "bandwidth-low");
}

#[test]
fn selectors_pick_points() {
    let mut ag = rec(1 << 20, 50.0, 3.0);
    ag.key.op = Op::AllGather;
    let runs = vec![run(vec![
        (rec(1 << 10, 5.0, 0.2), vec![]),
        (rec(1 << 20, 100.0, 10.0), vec![]),
        (ag, vec![]),
    ])];
    let c = criteria(
        "[[criterion]]\nop = \"allreduce\"\nmin_bytes = \"512K\"\nmin_busbw_gbps = 5\n\
         [[criterion]]\nmax_bytes = 1024\nmax_time_us = 4\n",
    );
    let v = judge(&c, &group(runs), header());
    let labels = |i: usize| -> Vec<String> {
        v.criteria[i]
            .points
            .iter()
            .map(|p| p.label.clone())
            .collect()
    };
    assert_eq!(labels(0), ["allreduce ring f32 w2 1 MiB"]);
    assert_eq!(labels(1), ["allreduce ring f32 w2 1 KiB"]);
    assert_eq!(v.criteria[0].result, Outcome::Pass);
    assert_eq!(v.criteria[1].result, Outcome::Fail);
    let chk = &v.criteria[1].points[0].checks[0];
    assert!((chk.margin_pct.unwrap() - -25.0).abs() < 1e-9);
    assert_eq!(v.exit_code, 1);
}

#[test]
fn a_proto_selector_picks_that_protocol_and_omitting_it_picks_all() {
    let with = |proto: Option<Proto>, busbw: f64| {
        let mut r = rec(1 << 20, 100.0, busbw);
        r.key.proto = proto;
        (r, vec![])
    };
    let runs = || {
        vec![run(vec![
            with(Some(Proto::Ll), 4.0),
            with(Some(Proto::Ll128), 9.0),
            with(Some(Proto::Simple), 12.0),
            with(None, 1.0),
        ])]
    };
    let c = criteria(
        "[[criterion]]\nname = \"ll128\"\nproto = \"ll128\"\nmin_busbw_gbps = 8\n\
         [[criterion]]\nname = \"big\"\nproto = \"ll128,simple\"\nmin_busbw_gbps = 10\n\
         [[criterion]]\nname = \"any\"\nmin_busbw_gbps = 0.5\n",
    );
    let v = judge(&c, &group(runs()), header());
    let labels = |i: usize| -> Vec<String> {
        v.criteria[i]
            .points
            .iter()
            .map(|p| p.label.clone())
            .collect()
    };
    assert_eq!(labels(0), ["allreduce ring/ll128 f32 w2 1 MiB"]);
    assert_eq!(v.criteria[0].selector, "proto ll128, any size");
    assert_eq!(v.criteria[0].result, Outcome::Pass);
    assert_eq!(
        labels(1),
        [
            "allreduce ring/ll128 f32 w2 1 MiB",
            "allreduce ring/simple f32 w2 1 MiB"
        ]
    );
    assert_eq!(v.criteria[1].result, Outcome::Fail);
    // Omitted: every point, with a protocol or without (host, MPI).
    assert_eq!(labels(2).len(), 4);
    assert_eq!(labels(2)[0], "allreduce ring f32 w2 1 MiB");
    let json = serde_json::to_value(&v.criteria[0].points[0]).unwrap();
    assert_eq!(json["proto"], "ll128");
    let json = serde_json::to_value(&v.criteria[2].points[0]).unwrap();
    assert!(json.get("proto").is_none(), "{json}");
}

#[test]
fn fit_deviation_uses_the_reference_prediction() {
    let profile =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/profiles/h100-ib400.json");
    let key = GroupKey {
        op: Op::AllGather,
        algo: Algo::Ring,
        proto: None,
        dtype: DType::BF16,
        world: 8,
        nodes: 1,
        bytes: 1 << 20,
        in_place: false,
        root: None,
        comm: Default::default(),
    };
    let fit = FitFile::read(&profile).unwrap();
    let q = Query {
        op: key.op,
        algo: key.algo,
        proto: None,
        dtype: Some(key.dtype),
        world: 8,
        nodes: 1,
        bytes: key.bytes,
        comm: Default::default(),
        algo_given: true,
    };
    let pred = predict(&fit, &q).unwrap().time_us;
    let point = |factor: f64| {
        let mut r = rec(key.bytes, pred * factor, 1.0);
        r.key.op = Op::AllGather;
        r.key.dtype = DType::BF16;
        r.key.world = 8;
        group(vec![run(vec![(r, vec![])])])
    };
    let text = format!(
        "[[criterion]]\nreference_fit = \"{}\"\nmax_fit_deviation = 0.05\nmax_fit_slowdown = 0.05\n",
        profile.display()
    );
    let c = criteria(&text);
    // 10% slower: both fail.
    let v = judge(&c, &point(1.1), header());
    let checks = &v.criteria[0].points[0].checks;
    assert!(
        (checks[0].measured.unwrap() - 0.1).abs() < 1e-9,
        "{checks:?}"
    );
    assert_eq!(checks[0].predicted_us, Some(pred));
    assert!(checks.iter().all(|c| c.result == Outcome::Fail));
    // 10% faster: off the model (deviation fails), but no slowdown.
    let v = judge(&c, &point(0.9), header());
    let checks = &v.criteria[0].points[0].checks;
    assert_eq!(checks[0].result, Outcome::Fail);
    assert_eq!(checks[1].result, Outcome::Pass);
    assert!((checks[1].measured.unwrap() - -0.1).abs() < 1e-9);
    // An op the reference has no model for cannot be judged.
    let mut other = rec(8, 1.0, 1.0);
    other.key.op = Op::Broadcast;
    let v = judge(&c, &group(vec![run(vec![(other, vec![])])]), header());
    let chk = &v.criteria[0].points[0].checks[0];
    assert_eq!(chk.result, Outcome::NoData);
    assert!(chk.note.as_deref().unwrap().contains("no model"), "{chk:?}");
}

#[test]
fn statistic_of_even_counts_is_the_middle_mean() {
    assert_eq!(
        statistic(Stat::Median, Bound::AtLeast, &[4.0, 1.0, 3.0, 2.0]),
        2.5
    );
    assert_eq!(statistic(Stat::Worst, Bound::AtMost, &[4.0, 1.0]), 4.0);
    assert_eq!(statistic(Stat::Worst, Bound::AtLeast, &[4.0, 1.0]), 1.0);
}

#[test]
fn drift_is_judged_over_a_soaks_cycles_in_order() {
    // One run, one point measured in 8 cycles: 100 µs, then 130 µs in the last two.
    let times = [100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 130.0, 130.0];
    let points = (0..8)
        .map(|c| {
            let mut r = rec(1 << 20, times[c], 10.0);
            r.cycle = c as u64;
            (r, vec![])
        })
        .collect();
    let m = group(vec![run(points)]);
    for (limit, result) in [(0.25, Outcome::Fail), (0.31, Outcome::Pass)] {
        let c = criteria(&format!("[[criterion]]\nmax_drift = {limit}\n"));
        let v = judge(&c, &m, header());
        let chk = only_check(&v);
        assert_eq!(chk.values, times.to_vec());
        assert_eq!(
            (chk.measured, chk.result),
            (Some(130.0 / 100.0 - 1.0), result)
        );
        let want = (result == Outcome::Fail).then_some(Reason::Drift);
        assert_eq!(chk.reason, want);
    }
    // One cycle, one repeat: nothing to judge, and said.
    let one = group(vec![run(vec![(rec(1 << 20, 100.0, 10.0), vec![])])]);
    let v = judge(
        &criteria("[[criterion]]\nmax_drift = 0.1\n"),
        &one,
        header(),
    );
    let chk = only_check(&v);
    assert_eq!((chk.measured, chk.result), (None, Outcome::NoData));
    assert!(chk.note.as_deref().unwrap().contains("no drift"), "{chk:?}");
}
