use super::*;
use crate::collective::{Algo, DType, Op, ReduceOp};
use crate::error::Error;

/// A record with awkward values: sub-microsecond times, tiny and huge numbers, values
/// whose decimal expansion does not end.
pub(crate) fn awkward_record() -> PointRecord {
    PointRecord {
        key: PointKey {
            backend: "host".into(),
            op: Op::ReduceScatter,
            algo: Algo::Ring,
            dtype: DType::BF16,
            redop: ReduceOp::Max,
            world: 3,
            nodes: 1,
            bytes: 8,
            count: 3,
            in_place: true,
            proto: None,
            root: None,
            comm: Default::default(),
            traffic: None,
            group: None,
            concurrent: None,
        },
        iters: 1000,
        warmup: 5,
        time_us_mean: 0.1 + 0.2,
        time_us_median: 0.287_654_321,
        time_us_min: 1e-7,
        time_us_p95: 1.0 / 3.0,
        time_us_p99: 123_456_789.123_456_79,
        time_us_max: 2.5e9,
        time_us_stddev: 0.0,
        time_cv: 0.012_345_678_9,
        time_us_mad: 5e-5,
        algbw_gbps: 8.0 / 287.654_321e3,
        busbw_gbps: 8.0 / 287.654_321e3 * 2.0 / 3.0,
        busbw_gbps_mean: 2.2e-8,
        wrong: u64::MAX,
        slowest_rank: 2,
        skew_us_median: 0.001,
        nccl_estimate_us: Some(12.125),
        loop_time_us: None,
        nccl_call: None,
        nccl_algo: None,
        nccl_proto: None,
        cycle: 7,
        ended_utc: Some("2026-11-28T05:30:00.125Z".into()),
        slowdown: None,
        aggregate_busbw_gbps: None,
        compute_slowdown: None,
    }
}

#[test]
fn example_records_are_physical_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let examples: Vec<PointRecord> = Op::ALL
        .iter()
        .map(|&op| PointRecord::example(op, 1 << 20, 4))
        .collect();
    for rec in &examples {
        check_point(rec).unwrap();
        w.append(rec).unwrap();
    }
    assert_eq!(read_summary(w.path()).unwrap(), examples);
}

#[test]
fn header_and_rows_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let a = awkward_record();
    let mut b = awkward_record();
    b.key.op = Op::AllGather;
    b.key.in_place = false;
    b.time_cv = f64::NAN;
    w.append(&a).unwrap();
    w.append(&b).unwrap();
    let text = std::fs::read_to_string(w.path()).unwrap();
    assert_eq!(text.lines().next().unwrap(), SUMMARY_COLUMNS.join(","));
    let back = read_summary(w.path()).unwrap();
    assert_eq!(back[0], a);
    assert!(back[1].time_cv.is_nan());
    b.time_cv = back[1].time_cv;
    assert_eq!(back[1].key, b.key);
    assert_eq!(back.len(), 2);
}

#[test]
fn proto_and_estimate_round_trip_and_older_files_without_them_read_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let mut a = awkward_record();
    a.key.proto = Some(Proto::Ll128);
    w.append(&a).unwrap();
    let text = std::fs::read_to_string(w.path()).unwrap();
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .ends_with(",ll128,12.125,,,,,,,,,,,7,2026-11-28T05:30:00.125Z,,,,,,"),
        "{text}"
    );
    let back = read_summary(w.path()).unwrap();
    assert_eq!(back[0].key.proto, Some(Proto::Ll128));
    assert_eq!(back[0].nccl_estimate_us, Some(12.125));
    // A file from before the columns: the header and every row end at skew_us_median.
    let cut = |l: &str| l[..l.rfind(',').unwrap()].to_string();
    let old: String = text
        .lines()
        .map(|l| format!("{}\n", (0..20).fold(l.to_string(), |l, _| cut(&l))))
        .collect();
    let path = dir.path().join("old.csv");
    std::fs::write(&path, old).unwrap();
    let back = read_summary(&path).unwrap();
    assert_eq!(back[0].key.proto, None);
    assert_eq!(back[0].nccl_estimate_us, None);
    assert_eq!(back[0].time_us_median, a.time_us_median);
    let bad = text.replace(",ll128,", ",ll64,");
    std::fs::write(&path, bad).unwrap();
    let msg = read_summary(&path).unwrap_err().to_string();
    assert!(msg.contains("column proto: cannot read 'll64'"), "{msg}");
    std::fs::write(&path, text.replace(",12.125,", ",inf,")).unwrap();
    let msg = read_summary(&path).unwrap_err().to_string();
    assert!(msg.contains("column nccl_estimate_us: 'inf'"), "{msg}");
    // An empty estimate (the library gave none) reads as None.
    std::fs::write(&path, text.replace(",12.125,", ",,")).unwrap();
    assert_eq!(read_summary(&path).unwrap()[0].nccl_estimate_us, None);
}

#[test]
fn roots_round_trip_and_older_files_give_rooted_ops_root_0() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let mut a = awkward_record();
    a.key.op = Op::Scatter;
    a.key.algo = crate::collective::Algo::Binomial;
    a.key.root = Some(2);
    let b = PointRecord::example(Op::Broadcast, 64, 4);
    w.append(&a).unwrap();
    w.append(&b).unwrap();
    let text = std::fs::read_to_string(w.path()).unwrap();
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .ends_with(",12.125,2,,,,,,,,,,7,2026-11-28T05:30:00.125Z,,,,,,"),
        "{text}"
    );
    let back = read_summary(w.path()).unwrap();
    assert_eq!((back[0].key.root, back[1].key.root), (Some(2), Some(0)));
    // Before the column: a rooted op had root 0, the others none.
    let cut = |l: &str| l[..l.rfind(',').unwrap()].to_string();
    let old: String = text
        .lines()
        .map(|l| format!("{}\n", (0..18).fold(l.to_string(), |l, _| cut(&l))))
        .collect();
    let path = dir.path().join("old.csv");
    std::fs::write(&path, old).unwrap();
    let back = read_summary(&path).unwrap();
    assert_eq!((back[0].key.root, back[1].key.root), (Some(0), Some(0)));
    // A root for an op without one, or one that is not a number, is refused.
    let mut c = awkward_record();
    c.key.root = Some(1);
    let mut text = format!("{}\n", SUMMARY_COLUMNS.join(","));
    push_row(&mut text, &fields(&c).unwrap());
    let msg = read_err(&text);
    assert!(
        msg.contains("column root: reducescatter has no root"),
        "{msg}"
    );
    let msg = read_err(
        &good_text()
            .replace(",12.125,,", ",12.125,x,")
            .replace(",reducescatter,", ",reduce,"),
    );
    assert!(msg.contains("column root"), "{msg}");
}

#[test]
fn refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    SummaryWriter::create(dir.path()).unwrap();
    assert!(SummaryWriter::create(dir.path()).is_err());
}

#[test]
fn header_only_is_no_points() {
    let dir = tempfile::tempdir().unwrap();
    let w = SummaryWriter::create(dir.path()).unwrap();
    assert!(read_summary(w.path()).unwrap().is_empty());
}

fn read_err(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(SUMMARY_FILE);
    std::fs::write(&path, text).unwrap();
    let err = read_summary(&path).unwrap_err();
    assert!(matches!(err, Error::Input { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("summary.csv"), "{msg}");
    msg
}

fn good_text() -> String {
    let mut text = format!("{}\n", SUMMARY_COLUMNS.join(","));
    push_row(&mut text, &fields(&awkward_record()).unwrap());
    text
}

#[test]
fn malformed_files_name_file_and_line() {
    assert!(read_err("").contains("empty file"));
    let good = good_text();
    let mut lines = good.lines();
    let (header, row) = (lines.next().unwrap(), lines.next().unwrap());
    let fields: Vec<&str> = row.split(',').collect();
    let short = format!("{header}\n{}\n", fields[..26].join(","));
    assert!(read_err(&short).contains("line 2: 26 fields"));
    let nan = good.replace(",0.30000000000000004,", ",NaN,");
    assert!(read_err(&nan).contains("line 2: column time_us_mean: 'NaN'"));
    let bad_op = good.replace(",reducescatter,", ",alltoallw,");
    assert!(read_err(&bad_op).contains("line 2: column op: cannot read 'alltoallw'"));
}

#[test]
fn wrong_or_foreign_header_is_refused() {
    let renamed = good_text().replacen("time_us_p95", "time_p95", 1);
    let msg = read_err(&renamed);
    assert!(
        msg.contains("line 1") && msg.contains("time_us_p95"),
        "{msg}"
    );
    let msg = read_err("# nccl-tests\nsize,count,type\n8,2,float\n");
    assert!(
        msg.contains("line 1") && msg.contains("not the header"),
        "{msg}"
    );
}

#[test]
fn loop_time_round_trips_with_nccl_tests_bandwidths_and_older_files_read_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let mut a = PointRecord::example(Op::AllReduce, 1 << 20, 4);
    a.loop_time_us = Some(250.0);
    w.append(&a).unwrap();
    let text = std::fs::read_to_string(w.path()).unwrap();
    // algbw = 1048576 B / 250 us = 4.194304 GB/s; busbw x 2(p-1)/p = 1.5 at 4 ranks.
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .ends_with(",250,4.194304,6.291456,,,,,,,0,,,,,,,"),
        "{text}"
    );
    let back = read_summary(w.path()).unwrap();
    assert_eq!(back[0].loop_time_us, Some(250.0));
    assert_eq!(back[0].loop_busbw_gbps(), Some(6.291456));
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, text.replace(",250,", ",-3,")).unwrap();
    let msg = read_summary(&path).unwrap_err().to_string();
    assert!(msg.contains("loop_time_us = -3"), "{msg}");
    a.loop_time_us = None;
    assert_eq!(a.loop_algbw_gbps(), None);
}

#[test]
fn nccl_call_round_trips_and_a_function_that_cannot_run_the_op_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let mut a = PointRecord::example(Op::AllToAll, 1 << 20, 4);
    a.nccl_call = Some("ncclAlltoAll".into());
    let mut b = PointRecord::example(Op::Gather, 1 << 20, 4);
    b.nccl_call = Some(crate::collective::NCCL_GROUPED_P2P.into());
    w.append(&a).unwrap();
    w.append(&b).unwrap();
    let back = read_summary(w.path()).unwrap();
    assert_eq!(back[0].nccl_call.as_deref(), Some("ncclAlltoAll"));
    assert_eq!(back[1].nccl_call.as_deref(), Some("ncclSend+ncclRecv"));
    let text = std::fs::read_to_string(w.path()).unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, text.replace(",ncclAlltoAll", ",ncclAllReduce")).unwrap();
    let msg = read_summary(&path).unwrap_err().to_string();
    assert!(
        msg.contains("column nccl_call: 'ncclAllReduce' does not run alltoall"),
        "{msg}"
    );
    // What NCCL ran, by its names; a name that is not NCCL's is refused.
    let mut c = PointRecord::example(Op::AllReduce, 1 << 20, 4);
    c.nccl_algo = Some("nvlstree".into());
    c.nccl_proto = Some("ll128".into());
    std::fs::create_dir(dir.path().join("c")).unwrap();
    let mut w = SummaryWriter::create(&dir.path().join("c")).unwrap();
    w.append(&c).unwrap();
    let back = read_summary(w.path()).unwrap();
    assert_eq!(back[0].nccl_algo.as_deref(), Some("nvlstree"));
    assert_eq!(back[0].nccl_proto.as_deref(), Some("ll128"));
    let text = std::fs::read_to_string(w.path()).unwrap();
    std::fs::write(&path, text.replace(",nvlstree,", ",butterfly,")).unwrap();
    let msg = read_summary(&path).unwrap_err().to_string();
    assert!(
        msg.contains("column nccl_algo: 'butterfly' is not one of"),
        "{msg}"
    );
}

#[test]
fn comm_setup_round_trips_and_older_files_and_none_read_as_the_default() {
    use crate::model::call::{CtaPolicy, Register};
    use crate::model::comm_setup::{CommSetup, CtaBounds};
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let comm = CommSetup {
        register: Some(Register::Local),
        cta_policy: Some(CtaPolicy::Efficiency),
        ctas: Some(CtaBounds { min: 2, max: 16 }),
    };
    let a = PointRecord::example(Op::AllReduce, 1 << 20, 4).with_comm(comm);
    w.append(&a).unwrap();
    w.append(&PointRecord::example(Op::AllReduce, 1 << 20, 4))
        .unwrap();
    let back = read_summary(w.path()).unwrap();
    assert_eq!(
        (back[0].key.comm, back[1].key.comm),
        (comm, CommSetup::default())
    );
    let text = std::fs::read_to_string(w.path()).unwrap();
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .ends_with(",local,efficiency,2:16,0,,,,,,,"),
        "{text}"
    );
    let path = dir.path().join("other.csv");
    std::fs::write(&path, text.replace(",local,", ",none,")).unwrap();
    assert_eq!(read_summary(&path).unwrap()[0].key.comm.register, None);
    std::fs::write(&path, text.replace(",2:16", ",16:2")).unwrap();
    let msg = read_summary(&path).unwrap_err().to_string();
    assert!(
        msg.contains("column nccl_ctas: cannot read '16:2'"),
        "{msg}"
    );
    // A file written before the columns (and the soak's): rows end at nccl_proto.
    let old: String = text
        .lines()
        .map(|l| l.rsplitn(12, ',').last().unwrap().to_string() + "\n")
        .collect();
    std::fs::write(&path, old).unwrap();
    assert_eq!(
        read_summary(&path).unwrap()[0].key.comm,
        CommSetup::default()
    );
}

#[test]
fn a_root_outside_the_group_or_an_algorithm_the_backend_lacks_is_refused() {
    let read_one = |rec: &PointRecord| {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SummaryWriter::create(dir.path()).unwrap();
        w.append(rec).unwrap();
        read_summary(w.path()).map(drop).map_err(|e| e.to_string())
    };
    let mut gather = PointRecord::example(Op::Gather, 1 << 20, 2);
    assert!(read_one(&gather).is_ok());
    gather.key.root = Some(99);
    let e = read_one(&gather).unwrap_err();
    assert!(
        e.contains("column root: 99 is not a rank of a group of 2"),
        "{e}"
    );
    let bruck =
        PointRecord::example(Op::Gather, 1 << 20, 2).with_algo(crate::collective::Algo::Bruck);
    let e = read_one(&bruck).unwrap_err();
    assert!(
        e.contains("column algo: gather has no bruck algorithm on the host backend"),
        "{e}"
    );
}
