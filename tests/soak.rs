//! Soak runs (`--cycles`, `--duration`, nccl-tests' `-N`) on the host backend, launched here
//! and across "nodes" as torchrun would start them: every cycle's rows on disk with their cycle
//! and time, whole cycles only, a clean end at the count, at the time, or on Ctrl-C.
#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use collbench::meta::RunStatus;
use collbench::model::record::PointRecord;
use common::launch::{assert_all_succeeded, one_rank_per_node, sweep_args};
use common::{command, meta, signal, summary, summary_rows_on_disk, wait_until, Spawned};

const LIMIT: Duration = Duration::from_secs(120);

/// Two sizes of AllReduce at two ranks, briefly: two points a cycle.
const SMALL: [&str; 12] = [
    "--op",
    "allreduce",
    "-b",
    "1K",
    "-e",
    "2K",
    "--ranks",
    "2",
    "-n",
    "3",
    "-w",
    "1",
];

/// The cycles of `rows`, which must come in whole cycles of `per_cycle` points in order, each
/// repeating the first cycle's points, with times that never go back.
fn whole_cycles(rows: &[PointRecord], per_cycle: usize) -> u64 {
    assert!(
        !rows.is_empty() && rows.len() % per_cycle == 0,
        "{} rows",
        rows.len()
    );
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.cycle, (i / per_cycle) as u64, "row {i}");
        assert_eq!(r.key, rows[i % per_cycle].key, "row {i}");
        assert_eq!(r.wrong, 0);
    }
    let times: Vec<_> = rows
        .iter()
        .map(|r| humantime::parse_rfc3339(r.ended_utc.as_deref().unwrap()).unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    (rows.len() / per_cycle) as u64
}

#[test]
fn counted_cycles_repeat_the_plan_with_cycle_and_time_on_every_row() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let mut args = SMALL.to_vec();
    args.extend(["--cycles", "3"]);
    let r = common::sweep_ok(&args, &out, LIMIT);
    assert_eq!(whole_cycles(&summary(&out), 2), 3);
    assert!(
        r.stdout
            .contains("# note: soak: the plan's 2 points, 3 cycles"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("# note: cycle 2 from "), "{}", r.stdout);
    let m = meta(&out);
    assert_eq!((m.status, m.points), (RunStatus::Complete, 6));
    assert_eq!(m.options["soak"]["cycles"], 3);
}

#[test]
fn a_soak_folder_is_judged_over_its_cycles_and_reported_with_drift() {
    let _guard = common::serial();
    let (tmp, out) = common::tempdir();
    let mut args = SMALL.to_vec();
    args.extend(["--cycles", "4"]);
    common::sweep_ok(&args, &out, LIMIT);
    let run = out.to_str().unwrap();
    // A drift ceiling no host can miss by this much, and wrong elements: a verdict that passes.
    let lenient = tmp.path().join("lenient.toml");
    std::fs::write(
        &lenient,
        "[[criterion]]\nmax_drift = 1000.0\nmax_wrong = 0\n",
    )
    .unwrap();
    let json = tmp.path().join("v");
    let c = lenient.to_str().unwrap();
    let accept = [
        "accept",
        "--criteria",
        c,
        "--run",
        run,
        "--out",
        json.to_str().unwrap(),
    ];
    let r = common::run(&accept, LIMIT);
    assert_eq!(r.code(), 0, "{}{}", r.stdout, r.stderr);
    let v = common::read_json(&json.join("verdict.json"));
    let point = &v["criteria"][0]["points"][0];
    let drift = &point["checks"][0];
    assert_eq!(drift["check"], "max_drift");
    assert_eq!(drift["values"].as_array().unwrap().len(), 4, "{drift}");
    assert!(drift["measured"].as_f64().unwrap().is_finite(), "{drift}");
    // A negative ceiling is refused by name.
    std::fs::write(&lenient, "[[criterion]]\nmax_drift = -0.1\n").unwrap();
    let r = common::run(&["accept", "--criteria", c, "--run", run], LIMIT);
    assert_eq!(r.code(), 2, "{}", r.stderr);
    assert!(r.stderr.contains("max_drift = -0.1"), "{}", r.stderr);
    // The report's soak section.
    let page = tmp.path().join("page.html");
    let r = common::run(&["report", run, "-o", page.to_str().unwrap()], LIMIT);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("4 cycles of 2 points from "), "soak section");
    assert!(html.contains("<th>drift</th>") && html.contains("<th>wrong cycles</th>"));
    // compare says once that it compares the first cycle.
    let r = common::run(&["compare", run, run], LIMIT);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    let said = format!("{}{}", r.stdout, r.stderr);
    assert_eq!(said.matches("is a soak of 4 cycles").count(), 2, "{said}");
    assert!(!said.contains("twice"), "{said}");
}

#[test]
fn nccl_tests_n_is_cycles_and_a_duration_ends_on_a_whole_cycle() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let mut args = SMALL.to_vec();
    args.extend(["-N", "2"]);
    common::sweep_ok(&args, &out, LIMIT);
    assert_eq!(whole_cycles(&summary(&out), 2), 2);
    let (_tmp2, out) = common::tempdir();
    let mut args = SMALL.to_vec();
    args.extend(["--duration", "300ms"]);
    common::sweep_ok(&args, &out, LIMIT);
    // However fast or slow this machine, at least one whole cycle and nothing cut.
    assert!(whole_cycles(&summary(&out), 2) >= 1);
    let m = meta(&out);
    assert_eq!(m.status, RunStatus::Complete);
    assert_eq!(m.options["soak"]["duration_s"], 0.3);
    assert!(m.options["soak"]["cycles"].is_null());
}

#[test]
fn an_endless_soak_ends_on_ctrl_c_keeping_every_row() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let mut args = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
    args.extend(SMALL);
    args.extend(["-N", "0"]);
    let child = Spawned::start(command(&args));
    // Some rows of a later cycle on disk, however long that takes here.
    let written = wait_until(LIMIT, || summary_rows_on_disk(&out) >= 5);
    assert!(written, "no fifth row within {LIMIT:?}");
    signal(child.pid(), libc::SIGINT);
    let run = child.finish(Instant::now(), LIMIT);
    assert_eq!(run.code(), 130, "{}", run.stderr);
    let m = meta(&out);
    assert_eq!(m.status, RunStatus::Interrupted);
    let rows = summary(&out);
    assert_eq!(m.points, rows.len());
    // Every row is whole, in cycle order; the last cycle may be cut by the signal.
    for (i, r) in rows.iter().enumerate() {
        assert_eq!((r.cycle, &r.key), ((i / 2) as u64, &rows[i % 2].key));
    }
    assert!(common::dev_shm()
        .iter()
        .all(|n| !n.starts_with("collbench")));
}

#[test]
fn a_duration_across_nodes_ends_every_rank_cleanly_on_rank_0s_word() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let extra = [
        "--op",
        "allreduce",
        "-b",
        "1K",
        "-e",
        "2K",
        "-n",
        "3",
        "-w",
        "1",
        "--duration",
        "300ms",
    ];
    let runs = one_rank_per_node(&["n0", "n1"], &sweep_args(&out, &extra), LIMIT);
    assert_all_succeeded(&runs);
    assert!(whole_cycles(&summary(&out), 2) >= 1);
    assert_eq!(meta(&out).status, RunStatus::Complete);
}

#[test]
fn near_valid_soak_flags_are_one_line_and_exit_2() {
    for (flags, says) in [
        (&["--cycles", "0"][..], "--cycles 0"),
        (&["--cycles", "3", "-N", "2"], "disagree"),
        (&["--cycles", "1000001"], "--cycles 1000001"),
        (&["--duration", "0"], "--duration"),
        (&["--duration", "2 fortnights"], "--duration"),
        (&["--duration", "400d"], "longer than a year"),
        (&["-N", "-1"], "run_cycles"),
    ] {
        let (_tmp, out) = common::tempdir();
        let mut args = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
        args.extend(SMALL);
        args.extend(flags);
        let r = common::run(&args, LIMIT);
        assert_eq!(r.code(), 2, "{flags:?}: {}", r.stderr);
        assert_eq!(r.stderr_lines().len(), 1, "{flags:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{flags:?}: {}", r.stderr);
        assert!(!out.exists(), "{flags:?} wrote a folder");
    }
}

/// Under mpirun, rank 0's clock ends the soak through a broadcast at each cycle's end.
#[cfg(feature = "mpi")]
#[test]
fn an_mpi_soak_for_a_duration_ends_cleanly_on_a_whole_cycle() {
    if !common::mpirun::have_mpirun() {
        return;
    }
    let _guard = common::serial();
    // SMALL without --ranks: mpirun starts the ranks.
    let base = &SMALL[..6]
        .iter()
        .chain(&SMALL[8..])
        .copied()
        .collect::<Vec<_>>();
    let (_tmp, out) = common::tempdir();
    let args = [&base[..], &["--duration", "300ms"]].concat();
    let r = common::mpirun::sweep(2, &out, &args, LIMIT);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert!(whole_cycles(&summary(&out), 2) >= 1);
    let m = meta(&out);
    assert_eq!((m.status, m.backend.as_str()), (RunStatus::Complete, "mpi"));
    let (_tmp2, out) = common::tempdir();
    let counted = [&base[..], &["--cycles", "2"]].concat();
    let r = common::mpirun::sweep(2, &out, &counted, LIMIT);
    assert_eq!(r.code(), 0, "{}", r.stderr);
    assert_eq!(whole_cycles(&summary(&out), 2), 2);
}
