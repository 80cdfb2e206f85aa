//! summary.csv's soak columns, `cycle` and `ended_utc`.

use super::tests::awkward_record;
use super::*;

#[test]
fn soak_cycles_and_times_round_trip_and_older_files_read_as_cycle_0() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let a = awkward_record();
    w.append(&a).unwrap();
    let back = read_summary(w.path()).unwrap();
    assert_eq!(
        (back[0].cycle, back[0].ended_utc.as_deref()),
        (7, Some("2026-11-28T05:30:00.125Z"))
    );
    // A file without the two columns (nor the traffic and split columns after them): cycle 0, no time.
    let text = std::fs::read_to_string(w.path()).unwrap();
    let cut = |line: &str| line.rsplitn(9, ',').nth(8).unwrap().to_string();
    let older: Vec<String> = text.lines().map(cut).collect();
    let path = dir.path().join("older.csv");
    std::fs::write(&path, older.join("\n") + "\n").unwrap();
    let back = read_summary(&path).unwrap();
    assert_eq!((back[0].cycle, back[0].ended_utc.clone()), (0, None));
}

#[test]
fn near_valid_cycles_and_times_are_refused_naming_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    w.append(&awkward_record()).unwrap();
    let text = std::fs::read_to_string(w.path()).unwrap();
    let good = ",7,2026-11-28T05:30:00.125Z";
    for (bad, column) in [
        (",-1,2026-11-28T05:30:00.125Z", "cycle"),
        (",7x,2026-11-28T05:30:00.125Z", "cycle"),
        (",7,2026-11-28 05:30:00", "ended_utc"),
        (",7,2026-13-28T05:30:00Z", "ended_utc"),
        (",7,2026-11-28T05:30:00+01:00", "ended_utc"),
        (",7,yesterday", "ended_utc"),
    ] {
        let path = dir.path().join("bad.csv");
        std::fs::write(&path, text.replace(good, bad)).unwrap();
        let msg = read_summary(&path).unwrap_err().to_string();
        assert!(msg.contains(column), "{bad}: {msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }
}

#[test]
fn an_alltoallv_traffic_round_trips_and_older_files_read_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let mut rec = PointRecord::example(Op::AllToAllV, 1 << 20, 4);
    rec.key.traffic = Some("moe tokens 4096 experts 8 top_k 2 zipf 1.2 seed 0".into());
    w.append(&rec).unwrap();
    let back = read_summary(w.path()).unwrap();
    assert_eq!(back[0].key.traffic, rec.key.traffic);
    let text = std::fs::read_to_string(w.path()).unwrap();
    let cut = |line: &str| line.rsplitn(7, ',').nth(6).unwrap().to_string();
    let older: Vec<String> = text.lines().map(cut).collect();
    let path = dir.path().join("older.csv");
    std::fs::write(&path, older.join("\n") + "\n").unwrap();
    assert_eq!(read_summary(&path).unwrap()[0].key.traffic, None);
    rec.key.traffic = Some("matrix a,b.txt".into());
    assert!(w.append(&rec).is_err(), "a comma would cut the row");
}

#[test]
fn a_split_group_round_trips_and_older_files_read_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SummaryWriter::create(dir.path()).unwrap();
    let mut rec = PointRecord::example(Op::AllReduce, 1 << 20, 2);
    (rec.key.group, rec.key.concurrent) = (Some("1-7/2".into()), Some("split %2".into()));
    (rec.slowdown, rec.aggregate_busbw_gbps) = (Some(1.25), Some(30.5));
    rec.compute_slowdown = Some(2.5);
    w.append(&rec).unwrap();
    let back = read_summary(w.path()).unwrap();
    assert_eq!(back[0], rec);
    let text = std::fs::read_to_string(w.path()).unwrap();
    assert!(text.ends_with(",1-7/2,split %2,1.25,30.5,2.5\n"), "{text}");
    let cut = |line: &str| line.rsplitn(6, ',').nth(5).unwrap().to_string();
    let older: Vec<String> = text.lines().map(cut).collect();
    let path = dir.path().join("older.csv");
    std::fs::write(&path, older.join("\n") + "\n").unwrap();
    let old = &read_summary(&path).unwrap()[0];
    assert_eq!((&old.key.group, old.slowdown), (&None, None));
    assert_eq!(old.compute_slowdown, None);
    std::fs::write(&path, text.replace(",1.25,", ",-1,")).unwrap();
    let msg = read_summary(&path).unwrap_err().to_string();
    assert!(msg.contains("slowdown"), "{msg}");
}
