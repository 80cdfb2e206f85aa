//! A results folder written point by point, refused when taken or unwritable, and named by
//! its start time, ops and backend.

use super::*;
use crate::report::ranks_csv::{self, RANKS_FILE};
use crate::report::samples_csv::{self, SAMPLES_FILE};
use crate::report::summary_csv;

fn meta() -> Meta {
    Meta::new(
        vec!["collbench".into()],
        "host",
        "shm",
        2,
        1,
        serde_json::json!({}),
    )
}

#[test]
fn appends_points_to_every_file_and_finishes_meta() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/run");
    let mut run = RunDir::create(&path, &meta()).unwrap();
    let written = Meta::read(&path.join(META_FILE)).unwrap();
    assert_eq!(written.files.len(), 4);
    assert_eq!(written.files["summary.csv"], "collbench.summary/v1");

    let rec = summary_csv::tests::awkward_record();
    let sample = IterSample {
        time_us: 2.0,
        slowest_rank: 1,
        fastest_us: 1.5,
    };
    let rank = RankSummary {
        rank: 1,
        global_rank: 1,
        node: 0,
        time_us_median: 2.0,
        time_us_mean: 2.0,
        time_us_max: 2.0,
        wrong: 0,
    };
    run.append_point(&rec, &[sample, sample], &[rank]).unwrap();
    run.append_point(&rec, &[sample], &[rank]).unwrap();
    assert_eq!(
        summary_csv::read_summary(&path.join(SUMMARY_FILE))
            .unwrap()
            .len(),
        2
    );
    let samples = samples_csv::read_samples(&path.join(SAMPLES_FILE)).unwrap();
    assert_eq!(samples.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 0, 1]);
    assert_eq!(
        ranks_csv::read_ranks(&path.join(RANKS_FILE)).unwrap().len(),
        2
    );

    run.finish(RunStatus::Complete, None).unwrap();
    let done = Meta::read(&path.join(META_FILE)).unwrap();
    assert_eq!((done.points, done.status), (2, RunStatus::Complete));
    assert!(done.ended.is_some() && done.files.len() == 4);
}

#[test]
fn telemetry_rows_carry_the_next_point_and_the_file_is_listed() {
    use crate::report::telemetry_csv::{read_telemetry, TelemetryRow};
    let dir = tempfile::tempdir().unwrap();
    let mut run = RunDir::create(dir.path(), &meta()).unwrap();
    let row = TelemetryRow::default();
    assert!(
        run.append_telemetry(std::slice::from_ref(&row)).is_err(),
        "not added yet"
    );
    run.add_telemetry().unwrap();
    let written = Meta::read(&dir.path().join(META_FILE)).unwrap();
    assert_eq!(written.files["telemetry.csv"], "collbench.telemetry/v1");
    let rec = summary_csv::tests::awkward_record();
    run.append_telemetry(&[row.clone(), row.clone()]).unwrap();
    run.append_point(&rec, &[], &[]).unwrap();
    run.append_telemetry(&[row]).unwrap();
    let rows = read_telemetry(&dir.path().join(TELEMETRY_FILE)).unwrap();
    let points: Vec<_> = rows.iter().map(|r| r.point).collect();
    assert_eq!(points, [0, 0, 1]);
}

#[test]
fn refuses_a_folder_with_results() {
    let dir = tempfile::tempdir().unwrap();
    RunDir::create(dir.path(), &meta()).unwrap();
    let err = RunDir::create(dir.path(), &meta()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Usage(_)), "{msg}");
    assert!(
        msg.contains("already holds results") && msg.contains("--out"),
        "{msg}"
    );
}

#[test]
fn unwritable_paths_give_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    for path in [file.join("run"), file.clone()] {
        let msg = RunDir::create(&path, &meta()).unwrap_err().to_string();
        let want = format!("cannot write results to {}: ", path.display());
        assert!(
            msg.starts_with(&want) && msg.ends_with("choose another --out"),
            "{msg}"
        );
        assert!(!msg.contains('\n') && !msg.contains("os error"), "{msg}");
    }
}

#[test]
fn default_folders_of_runs_started_together_differ() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("results/20261122-081500-allreduce-host");
    let first = new_unique_dir(&base).unwrap();
    let second = new_unique_dir(&base).unwrap();
    assert_eq!(first, base);
    assert_eq!(
        second,
        tmp.path().join("results/20261122-081500-allreduce-host-2")
    );
    assert!(second.is_dir());
}

#[test]
fn run_id_format() {
    let t = humantime::parse_rfc3339("2026-11-22T08:15:00Z").unwrap();
    let ops = [Op::AllReduce, Op::AllGather, Op::AllReduce];
    assert_eq!(
        run_id_at(t, &ops, "host"),
        "20261122-081500-allreduce+allgather-host"
    );
    assert_eq!(run_id_at(t, &[], "nccl"), "20261122-081500-nccl");
    let now = default_run_id(&[Op::AllGather], "host");
    assert_eq!(now.len(), "20261122-081500-allgather-host".len(), "{now}");
    assert!(
        now.ends_with("-allgather-host") && now.as_bytes()[8] == b'-',
        "{now}"
    );
}
