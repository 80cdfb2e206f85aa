//! `collbench import nccl-inspector`: a job's NCCL Inspector logs (one file per process) read
//! together into one results folder per communicator and collective, each call a sample whose
//! time is the slowest rank's; near-valid files refused in one line naming the file and line.

mod common;

use std::fs;

use common::imports::{data, import, ok, path, sorted_dirs};
use common::recorded::refused;
use common::{meta, summary};

const JOB: &str = "nccl-inspector/job-2rank";

#[test]
fn a_jobs_per_process_logs_become_one_folder_per_collective_with_every_call_a_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("job");
    let r = ok(import(&[
        "nccl-inspector",
        &data(JOB),
        "--dtype",
        "bf16",
        "--out",
        path(&out),
    ]));
    assert!(
        r.stderr.contains("2 point-to-point objects"),
        "{}",
        r.stderr
    );
    let dirs = sorted_dirs(&out);
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let of = |op: &str| dirs.iter().find(|d| path(d).ends_with(op)).unwrap().clone();
    // AllReduce: the slowest rank of each call, 102 110 101 105 us: median 103.5.
    let ar = of("allreduce");
    let points = summary(&ar);
    let sizes: Vec<usize> = points.iter().map(|p| p.key.bytes).collect();
    assert_eq!(sizes, [256 << 10, 1 << 20, 4 << 20]);
    let p = &points[1];
    assert_eq!(
        (p.key.world, p.key.nodes, p.key.bytes, p.key.count),
        (2, 1, 1 << 20, 1 << 19)
    );
    assert_eq!(
        (p.iters, p.time_us_median, p.time_us_mean),
        (4, 103.5, 104.5)
    );
    assert_eq!((p.time_us_min, p.time_us_max), (101.0, 110.0));
    let algbw = 1048576.0 / 103.5e3;
    assert_eq!((p.algbw_gbps, p.busbw_gbps), (algbw, algbw));
    // Two calls each were slowest on rank 0 and rank 1: the lower rank.
    assert_eq!(p.slowest_rank, 0);
    let samples = fs::read_to_string(ar.join("samples.csv")).unwrap();
    assert_eq!(samples.lines().count(), 1 + 2 + 4 + 2, "{samples}");
    assert!(
        samples.contains("\n1,allreduce,auto,bf16,2,1048576,false,3,105,0,104\n"),
        "{samples}"
    );
    let m = meta(&ar);
    let info = m.import.as_ref().unwrap();
    assert_eq!(
        (info.tool.as_str(), info.tool_version.as_deref()),
        ("nccl-inspector", Some("v4.0"))
    );
    assert!(info.per_iteration_samples && !info.checked);
    assert!(info.notes[0].contains("--dtype bf16"), "{:?}", info.notes);
    assert_eq!((m.ranks, m.nodes, m.backend.as_str()), (2, 1, "nccl"));
    assert_eq!(
        (m.hosts.clone(), m.rank_nodes.clone()),
        (vec!["gpu-node-07".to_string()], vec![0, 0])
    );
    // AllGather: 256 KiB per rank is S = 512 KiB; the slowest of 42 41 43 us is 42.
    let ag = summary(&of("allgather"));
    let p = &ag[0];
    assert_eq!(
        (p.key.bytes, p.iters, p.time_us_median),
        (512 << 10, 3, 42.0)
    );
    assert_eq!(p.busbw_gbps, 524288.0 / 42e3 * 0.5);
    // The folders are ordinary results folders: fit reads them.
    let fit = tmp.path().join("fit.json");
    let r = common::run(
        &["fit", path(&ar), "-o", path(&fit)],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(r.code(), 0, "{}", r.stderr);
}

#[test]
fn without_dtype_or_with_a_type_that_does_not_divide_the_message_it_says_so() {
    let r = import(&["nccl-inspector", &data(JOB)]);
    refused(&r, &["records no element type", "--dtype"]);
    let r = import(&["nccl-tests", &data(JOB), "--dtype", "bf16"]);
    refused(&r, &["--dtype bf16", "drop --dtype"]);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("odd.log");
    let text = fs::read_to_string(format!("{}/gpu-node-07-pid41001.log", data(JOB))).unwrap();
    fs::write(
        &file,
        text.replace(
            "\"coll_msg_size_bytes\":262144",
            "\"coll_msg_size_bytes\":262143",
        ),
    )
    .unwrap();
    let out = tmp.path().join("odd");
    let r = ok(import(&[
        "nccl-inspector",
        path(&file),
        "--dtype",
        "bf16",
        "--out",
        path(&out),
    ]));
    assert!(
        r.stderr.contains("not a whole number of bf16 elements"),
        "{}",
        r.stderr
    );
}

#[test]
fn near_valid_inspector_lines_are_refused_naming_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let good = fs::read_to_string(format!("{}/gpu-node-07-pid41001.log", data(JOB))).unwrap();
    let first = good.lines().next().unwrap();
    for (bad, says) in [
        (
            first.replace("\"rank\":0", "\"rank\":2"),
            "rank 2 is not below n_ranks 2",
        ),
        (first.replace("\"nnodes\":1", "\"nnodes\":3"), "nnodes 3"),
        (first.replace("\"n_ranks\":2", "\"n_ranks\":0"), "n_ranks 0"),
        (first.replace("v4.0", "v3.1"), "v3.1"),
        (
            first.replace(
                "\"coll_msg_size_bytes\":1048576",
                "\"coll_msg_size_bytes\":0",
            ),
            "coll_msg_size_bytes 0",
        ),
        (
            first.replace("\"coll_exec_time_us\":100", "\"coll_exec_time_us\":-5"),
            "coll_exec_time_us -5",
        ),
        (
            first.replace("\"coll_sn\":10", "\"coll_sn\":\"ten\""),
            "not an NCCL Inspector object",
        ),
        (
            first[..first.len() - 9].to_string(),
            "not an NCCL Inspector object",
        ),
        (
            first.replace("\"coll_perf\"", "\"coll_perfx\""),
            "neither coll_perf nor p2p_perf",
        ),
    ] {
        let file = tmp.path().join("bad.log");
        fs::write(&file, format!("{first}\n{bad}\n")).unwrap();
        let r = import(&["nccl-inspector", path(&file), "--dtype", "f32"]);
        refused(&r, &["bad.log", "line 2", says]);
    }
}
