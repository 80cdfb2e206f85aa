//! `collbench import` on real nccl-tests and OSU logs (tests/data/import, sources in its
//! README.md), and every downstream command on the folders it writes: fit (with a cross-world
//! model over logs of 1, 2 and 10 nodes), accept, compare against a real host sweep, plot,
//! report and project --fit.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::imports::{data, import, ok, path, sorted_dirs};
use common::{meta, run, summary};

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn a_tagged_v2_18_log_becomes_a_folder_with_the_logs_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ar");
    let log = data("nccl-tests/all_reduce_v2.18.0_tagged_stderr_versionheader.log");
    let r = ok(import(&["nccl-tests", &log, "--out", path(&out)]));
    assert!(
        r.stdout.contains("nccl allreduce world 2: 16 points"),
        "{}",
        r.stdout
    );
    let m = meta(&out);
    let info = m.import.as_ref().unwrap();
    assert_eq!((m.backend.as_str(), m.ranks, m.nodes), ("nccl", 2, 1));
    assert_eq!(m.gpus, vec!["NVIDIA GeForce RTX 5090"; 2]);
    assert_eq!(m.library.as_deref(), Some("NCCL 2.29.7"));
    assert_eq!(
        (info.tool.as_str(), info.test.as_str()),
        ("nccl-tests", "all_reduce_perf_mpi")
    );
    assert_eq!(info.tool_version.as_deref(), Some("2.18.0"));
    assert_eq!(info.lines, [11, 29]);
    assert!(!info.per_iteration_samples && info.checked && !info.truncated);
    assert_eq!(info.bandwidth_mismatches, 0);
    let points = summary(&out);
    assert_eq!(points.len(), 16);
    // `1048576  262144  float  sum  -1  4366.46  0.24  0.24  0  4365.21  0.24  0.24  0`
    let (first, first_in) = (&points[0], &points[1]);
    assert_eq!(
        (first.key.bytes, first.key.count, first.key.in_place),
        (1048576, 262144, false)
    );
    assert_eq!(
        (first.time_us_mean, first_in.time_us_mean),
        (4366.46, 4365.21)
    );
    assert!(first_in.key.in_place && first.time_us_median.is_nan() && first.time_cv.is_nan());
    assert_eq!(first.algbw_gbps, 1048576.0 / 4366.46e3);
    assert_eq!(
        first.busbw_gbps, first.algbw_gbps,
        "2 ranks: factor 2(p-1)/p = 1"
    );
    assert_eq!(points[15].time_us_mean, 58055.4);
    // nccl-tests' time is its loop time: the column collbench's own loop fills.
    assert!(points
        .iter()
        .all(|p| p.loop_time_us == Some(p.time_us_mean)));
    for f in ["samples.csv", "ranks.csv"] {
        let text = fs::read_to_string(out.join(f)).unwrap();
        assert_eq!(text.lines().count(), 1, "{f} holds only its header");
    }
}

#[test]
fn multi_node_and_old_release_logs_keep_hosts_errors_and_report_other_bandwidths() {
    let tmp = tempfile::tempdir().unwrap();
    let efa = tmp.path().join("efa");
    let log = data("nccl-tests/all_reduce_old_noroot_2node_16gpu_tagged_ncclinfo.log");
    ok(import(&["nccl-tests", &log, "--out", path(&efa)]));
    let m = meta(&efa);
    assert_eq!((m.ranks, m.nodes, m.hosts.len()), (16, 2, 2));
    assert_eq!(m.hosts[1], "nccl-tests-efa-16-worker-1");
    assert_eq!(m.rank_nodes[8], 1);
    assert_eq!(m.library.as_deref(), Some("NCCL 2.9.9"));
    assert!(m.import.unwrap().notes[0].contains("were not the benchmark's"));
    // 2019: AllGather printed algbw as S(p-1)/p over time; collbench's S/t differs and says so.
    let ag = tmp.path().join("ag");
    let log = data("nccl-tests/all_gather_2019_g12_noredop_column.log");
    let r = ok(import(&["nccl-tests", &log, "--out", path(&ag)]));
    let info = meta(&ag).import.unwrap();
    assert!(info.bandwidth_mismatches > 10, "{info:?}");
    assert_eq!(
        (info.max_error, info.checked),
        (Some(1.0), true),
        "{info:?}"
    );
    // An error of 1 is far beyond nccl-tests' 1e-5 for float: those points are wrong.
    assert!(summary(&ag).iter().any(|p| p.wrong == 1));
    assert!(
        r.stderr.contains("skipped: 0 B: nothing was moved"),
        "{}",
        r.stderr
    );
    // Said once per line, not once per half (out of place, in place) of it.
    assert_eq!(
        r.stderr.matches("line 20: skipped").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("and 43 more like these"), "{}", r.stderr);
    assert!(
        info.notes
            .iter()
            .any(|n| n.contains("algbw printed 13.20 GB/s")),
        "{info:?}"
    );
}

#[test]
fn a_log_cut_inside_its_table_keeps_its_complete_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let text =
        fs::read_to_string(data("nccl-tests/all_reduce_v2.17.8_10node_80rank_h100.log")).unwrap();
    // Cut in the middle of the row of 256 MiB: the rows before it are complete.
    let at = text.find("   268435456 ").unwrap() + 40;
    let cut = tmp.path().join("all_reduce_perf_cut.log");
    fs::write(&cut, &text[..at]).unwrap();
    let out = tmp.path().join("cut");
    let r = ok(import(&["nccl-tests", path(&cut), "--out", path(&out)]));
    assert!(r.stdout.contains("the log was cut"), "{}", r.stdout);
    let m = meta(&out);
    assert!(m.import.as_ref().unwrap().truncated);
    assert_eq!(m.status, collbench::meta::RunStatus::Failed);
    let points = summary(&out);
    assert_eq!(points.len(), 6, "32, 64 and 128 MiB, both halves");
    assert_eq!(points[5].key.bytes, 134217728);
}

#[test]
fn files_that_are_not_logs_exit_2_naming_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let readme = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let r = import(&["nccl-tests", readme, "--out", path(&tmp.path().join("x"))]);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("Cargo.toml: line 1: not a nccl-tests log"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr_lines().len(), 1, "{}", r.stderr);
    let r = import(&["osu", readme, "--world", "2"]);
    assert_eq!(r.code(), 2);
    assert!(
        r.stderr.contains("not an OSU collective latency log"),
        "{}",
        r.stderr
    );
    // A log of two tests imports as one folder per run (alltoall, then sendrecv), each with
    // every row of its table.
    let a2a = data("nccl-tests/alltoall_sendrecv_starting_line_no_version_header_2node.log");
    let a2a_out = tmp.path().join("a2a");
    let r = import(&["nccl-tests", &a2a, "--out", path(&a2a_out)]);
    assert_eq!(r.code(), 0, "{r:?}");
    let runs = sorted_dirs(&a2a_out);
    let ops: Vec<String> = runs
        .iter()
        .map(|d| summary(d)[0].key.op.name().to_string())
        .collect();
    assert_eq!(ops, ["alltoall", "sendrecv"], "{runs:?}");
    for d in &runs {
        let rows = summary(d);
        assert_eq!(rows.len(), 20, "{}", d.display());
        assert!(rows.iter().all(|p| p.key.world == 2));
    }
    for bad in [vec!["nccl", "x"], vec!["osu", readme, "--world", "0"]] {
        let r = import(&bad);
        assert_eq!((r.code(), r.stderr_lines().len()), (2, 1), "{}", r.stderr);
    }
    assert!(
        !tmp.path().join("x").exists(),
        "nothing written for a refused import"
    );
}

#[test]
fn osu_sizes_become_nccl_tests_sizes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("osu");
    let ag = data("osu/osu_allgather_v5.6.2_default_64rank_2node_impi.txt");
    let ar = data("osu/osu_allreduce_v5.6.2_default_64rank_2node_impi.txt");
    let args = [
        "osu",
        &ag,
        &ar,
        "--world",
        "64",
        "--nodes",
        "2",
        "--out",
        path(&out),
    ];
    ok(import(&args));
    let dirs = sorted_dirs(&out);
    assert_eq!(dirs.len(), 2);
    let gather = summary(&dirs[0]);
    // `4  17.76`: OSU's allgather size is per rank; nccl-tests' S is 64 times that.
    let row = gather.iter().find(|p| p.key.bytes == 4 * 64).unwrap();
    assert_eq!(
        (row.key.op.name(), row.time_us_mean, row.key.nodes),
        ("allgather", 17.76, 2)
    );
    let reduce = summary(&dirs[1]);
    assert_eq!((reduce[0].key.bytes, reduce[0].time_us_mean), (4, 3.90));
    assert_eq!(meta(&dirs[1]).backend, "mpi");
}

/// The H100 cluster's logs at 2 ranks on 2 nodes, 8 on 1 and 80 on 10, imported into `out`.
fn h100_cluster(out: &Path) -> Vec<PathBuf> {
    let logs = [
        data("nccl-tests/allreduce_sendrecv_smoke_v2.17.8_2node_h100.log"),
        data("nccl-tests/multi_coll_v2.17.8_1node_8proc_h100_allreduce_allgather_rs_alltoall_sendrecv.log"),
        data("nccl-tests/all_reduce_v2.17.8_10node_80rank_h100.log"),
    ];
    let mut args = vec!["nccl-tests"];
    args.extend(logs.iter().map(String::as_str));
    args.extend(["--out", path(out)]);
    ok(import(&args));
    sorted_dirs(out)
}

#[test]
fn fit_and_project_read_imported_folders_across_node_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = h100_cluster(&tmp.path().join("h100"));
    // AllReduce at 2, 8 and 80 ranks, the 8-GPU log's AllGather, ReduceScatter, AllToAll and
    // SendRecv, and the 2-node log's SendRecv.
    assert_eq!(dirs.len(), 8, "{dirs:?}");
    let fit = tmp.path().join("fit.json");
    let mut args = vec!["fit", "-o", path(&fit)];
    args.extend(dirs.iter().map(|d| path(d)));
    let r = ok(run(&args, LIMIT));
    assert!(
        r.stdout.contains("one observation (its average)"),
        "{}",
        r.stdout
    );
    let json: serde_json::Value = serde_json::from_slice(&fs::read(&fit).unwrap()).unwrap();
    let models = json["models"].as_array().unwrap();
    let ar = models
        .iter()
        .find(|m| m["op"] == "allreduce" && m["form"] == "two-level" && m["in_place"] == false)
        .unwrap_or_else(|| panic!("no two-level allreduce model: {models:?}"));
    assert_eq!(ar["worlds"], serde_json::json!([2, 8, 80]));
    // One observation per size: as many as the curve has sizes.
    let curve = &json["curves"][0];
    assert_eq!(curve["line"]["quality"]["samples"], curve["sizes"]);
    let r = ok(run(
        &[
            "project",
            "--fit",
            path(&fit),
            "--model",
            "llama2-7b",
            "--hardware",
            "h100",
            "--world-sizes",
            "8",
        ],
        LIMIT,
    ));
    assert!(
        r.stdout.lines().any(|l| l.trim_start().starts_with("8 ")),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr
            .contains("allgather auto: 8 ranks on 1 node(s) were measured"),
        "{}",
        r.stderr
    );
}

#[test]
fn accept_plot_and_report_judge_and_draw_an_imported_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ar80");
    let log = data("nccl-tests/all_reduce_v2.17.8_10node_80rank_h100.log");
    ok(import(&["nccl-tests", &log, "--out", path(&out)]));
    // `134217728 ... 1250.59  107.32  211.96`: busbw 211.96 GB/s at 128 MiB out of place.
    let criteria = tmp.path().join("c.toml");
    let write = |floor: f64| {
        fs::write(
            &criteria,
            format!(
                "name = \"h100-10n\"\n[[criterion]]\nname = \"correct\"\nmax_wrong = 0\n\
                 [[criterion]]\nname = \"busbw\"\nmin_bytes = \"128M\"\nmax_bytes = \"128M\"\n\
                 min_busbw_gbps = {floor}\n"
            ),
        )
        .unwrap()
    };
    let accept = || {
        run(
            &["accept", "--criteria", path(&criteria), "--run", path(&out)],
            LIMIT,
        )
    };
    write(150.0);
    assert_eq!(accept().code(), 0);
    write(250.0);
    let r = accept();
    assert_eq!(r.code(), 1, "{}", r.stdout);
    let plots = tmp.path().join("plots");
    ok(run(
        &["plot", path(&out), "--out", path(&plots), "--format", "svg"],
        LIMIT,
    ));
    assert!(plots.join("busbw-allreduce.svg").is_file());
    let html = tmp.path().join("r.html");
    ok(run(&["report", path(&out), "-o", path(&html)], LIMIT));
    let page = fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("all_reduce_perf"),
        "the page names the source test"
    );
}

#[test]
fn compare_holds_an_imported_run_against_a_host_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let imported = tmp.path().join("nccl");
    let log = data("nccl-tests/all_reduce_v2.18.0_tagged_stderr_versionheader.log");
    // The user knows NCCL_ALGO=Ring was set: the points are ring points.
    ok(import(&[
        "nccl-tests",
        &log,
        "--algo",
        "ring",
        "--out",
        path(&imported),
    ]));
    let host = tmp.path().join("host");
    common::sweep_ok(
        &[
            "--op",
            "allreduce",
            "--ranks",
            "2",
            "-b",
            "1M",
            "-e",
            "2M",
            "--iters",
            "5",
            "--warmup",
            "1",
        ],
        &host,
        LIMIT,
    );
    let r = run(&["compare", path(&imported), path(&host), "--json"], LIMIT);
    assert!(matches!(r.code(), 0 | 1), "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "1 and 2 MiB out of place: {points:?}");
    assert!(json["only_in_a"].as_array().unwrap().len() >= 14);
    // The imported side has only nccl-tests' loop time: both sides are compared on it.
    let first = &points[0];
    assert_eq!(first["time_us_a"], 4366.46);
    let host_loop = summary(&host)[0].loop_time_us.expect("a loop time");
    assert_eq!(first["time_us_b"].as_f64().unwrap(), host_loop);
}
