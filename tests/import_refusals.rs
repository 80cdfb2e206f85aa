//! `collbench import` refusing what it cannot hold as it is: folder links and folders too
//! deep, rows that cannot be (a negative size, a negative #wrong), labels that contradict the log
//! (--test, --algo), and logs of many runs none of which can be imported, each said in a line.

mod common;

use std::path::{Path, PathBuf};

use common::imports::{data, import, ok, path};

#[test]
fn folder_links_are_not_followed_and_what_is_too_deep_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let log = data("nccl-tests/all_reduce_v2.18.0_tagged_stderr_versionheader.log");
    std::fs::copy(&log, logs.join("ar.log")).unwrap();
    // A link back up the tree would import the same run again at every level.
    std::os::unix::fs::symlink(".", logs.join("again")).unwrap();
    let mut deep = logs.join("d");
    for i in 0..10 {
        deep = deep.join(format!("{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::copy(&log, deep.join("deep.log")).unwrap();
    let out = tmp.path().join("out");
    let r = ok(import(&["nccl-tests", path(&logs), "--out", path(&out)]));
    assert_eq!(r.stdout.matches("points ->").count(), 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("again: a link to a folder, not followed"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("deeper than 8 folders"), "{}", r.stderr);
}

/// A one-rank all_reduce_perf log whose one table row is `row`.
fn one_row_log(dir: &Path, row: &str) -> PathBuf {
    let text = format!(
        "# Collective test starting: all_reduce_perf\n\
         # nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n\
         #  Rank  0 Group  0 Pid  1 on a device  0 [0x1] GPU\n\
         #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
         {row}\n\
         # Avg bus bandwidth    : 0.0\n"
    );
    let p = dir.join("ar.log");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn impossible_rows_and_contradicting_labels_are_refused_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let good = "          64            16     float     sum      -1    10.00    0.01    0.01      0    10.00    0.01    0.01      0";
    for (row, said) in [
        (
            good.replacen("          64", "   -67108864", 1),
            "size '-67108864'",
        ),
        (
            good.replacen("          64", "        1e20", 1),
            "size '1e20'",
        ),
        (
            good.replacen("      0    10.00", "     -1    10.00", 1),
            "#wrong '-1' is negative",
        ),
    ] {
        let log = one_row_log(tmp.path(), &row);
        let r = import(&["nccl-tests", path(&log), "--out", path(&out)]);
        assert_eq!(r.code(), 2, "{row}: {}", r.stderr);
        assert!(
            r.stderr.contains("line 5") && r.stderr.contains(said),
            "{}",
            r.stderr
        );
    }
    let log = one_row_log(tmp.path(), good);
    let r = import(&[
        "nccl-tests",
        path(&log),
        "--test",
        "all_gather_perf",
        "--out",
        path(&out),
    ]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the log says it is all_reduce_perf's, but --test all_gather_perf"),
        "{}",
        r.stderr
    );
    let r = import(&[
        "nccl-tests",
        path(&log),
        "--algo",
        "bruck",
        "--out",
        path(&out),
    ]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--algo bruck: NCCL runs allreduce with auto"),
        "{}",
        r.stderr
    );
    ok(import(&[
        "nccl-tests",
        path(&log),
        "--test",
        "all_reduce_perf",
        "--algo",
        "ring",
        "--out",
        path(&out),
    ]));
    let osu = data("osu/osu_allreduce_v7.4_default_2node_char.txt");
    let other = tmp.path().join("osu");
    let r = import(&[
        "osu",
        &osu,
        "--test",
        "gather",
        "--world",
        "2",
        "--out",
        path(&other),
    ]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("the log says it is an OSU allreduce log"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_thousand_runs_none_importable_make_one_short_line() {
    let tmp = tempfile::tempdir().unwrap();
    let run = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n\
               #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
                          8             2     float     sum      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0\n\
               # Avg bus bandwidth    : 0.0\n";
    let log = tmp.path().join("many.log");
    std::fs::write(&log, run.repeat(1000)).unwrap();
    let out = tmp.path().join("out");
    let r = import(&[
        "nccl-tests",
        path(&log),
        "--test",
        "all_reduce_perf",
        "--out",
        path(&out),
    ]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", r.stderr);
    assert!(
        lines[0].len() < 400,
        "{} bytes: {}",
        lines[0].len(),
        lines[0]
    );
    assert!(
        lines[0].contains("give --world N; and 999 more runs, none importable"),
        "{}",
        lines[0]
    );
}
