//! `collbench accept` running its own sweeps (`[sweep]` in the criteria): repeats into the out
//! folder, criteria refused before measuring when no planned point matches them, and two accepts
//! started together each in their own default folder.

mod common;

use std::fs;

use common::accept::{accept, refused, write, LIMIT};
use common::serial;

#[test]
fn repeats_sweep_into_the_out_folder_with_a_clean_stdout() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "[sweep]\nop = \"allreduce\"\nranks = 2\nmin_bytes = \"1K\"\nmax_bytes = \"4K\"\n\
                iters = 5\nwarmup = 1\n\
                [[criterion]]\nname = \"ok\"\nmax_wrong = 0\nmax_time_us = 1e6\nmax_rank_skew = 1e3\n";
    let c = write(tmp.path(), "c.toml", text);
    let out = tmp.path().join("acc");
    let r = {
        let _guard = serial();
        accept(&[
            "--criteria",
            c.to_str().unwrap(),
            "--repeat",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ])
    };
    assert_eq!(r.code(), 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("only the verdict on stdout");
    assert_eq!(v["repeats"], 2);
    assert_eq!(v["criteria"][0]["points"].as_array().unwrap().len(), 3);
    for i in [1, 2] {
        assert!(out.join(format!("repeat-{i}/summary.csv")).is_file());
    }
    assert!(out.join("verdict.json").is_file() && out.join("junit.xml").is_file());
    // The sweeps' live tables went to stderr.
    assert!(r.stderr.contains("allreduce"), "{}", r.stderr);
}

#[test]
fn criteria_that_no_planned_point_matches_are_refused_before_measuring() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "[sweep]\nop = \"allreduce\"\nranks = 2\nmin_bytes = \"1K\"\nmax_bytes = \"4K\"\n\
                [[criterion]]\nname = \"ag\"\nop = \"allgather\"\nmax_wrong = 0\n";
    let c = write(tmp.path(), "c.toml", text);
    let out = tmp.path().join("acc");
    let r = accept(&[
        "--criteria",
        c.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(
        &r,
        &[
            "criterion 'ag'",
            "matches no point the [sweep] measures",
            "op allgather",
        ],
    );
    assert!(!out.join("repeat-1").exists());
    let bad = write(
        tmp.path(),
        "b.toml",
        "[sweep]\nop = \"allgatherr\"\n[[criterion]]\nmax_wrong = 0\n",
    );
    let r = accept(&[
        "--criteria",
        bad.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    refused(&r, &["b.toml", "[sweep]", "allgatherr"]);
}

#[test]
fn two_accepts_started_together_get_their_own_default_folders() {
    // Both start within the same second (almost always): each must get its own folder
    // (`…-<name>` and `…-<name>-2`), not sweep into and judge one folder between them.
    let tmp = tempfile::tempdir().unwrap();
    let text = "name = \"twice\"\n[sweep]\nop = \"allreduce\"\nranks = 2\nmin_bytes = \"1K\"\n\
                max_bytes = \"1K\"\niters = 3\nwarmup = 1\n\
                [[criterion]]\nname = \"ok\"\nmax_wrong = 0\n";
    let c = write(tmp.path(), "c.toml", text);
    let runs = {
        let _guard = serial();
        let started = std::time::Instant::now();
        let spawn = || {
            let mut cmd = common::command(&["accept", "--criteria", c.to_str().unwrap()]);
            cmd.current_dir(tmp.path());
            common::Spawned::start(cmd)
        };
        let (a, b) = (spawn(), spawn());
        [a.finish(started, LIMIT), b.finish(started, LIMIT)]
    };
    for r in &runs {
        assert_eq!(r.code(), 0, "{r:?}");
    }
    let mut dirs: Vec<String> = fs::read_dir(tmp.path().join("results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    for d in &dirs {
        assert!(d.contains("-accept-twice"), "{d}");
        let dir = tmp.path().join("results").join(d);
        assert!(dir.join("verdict.json").is_file(), "{d}");
        assert!(dir.join("repeat-1/summary.csv").is_file(), "{d}");
    }
    if dirs[1].starts_with(&dirs[0]) {
        assert_eq!(dirs[1], format!("{}-2", dirs[0]));
    }
}

#[test]
fn a_gpu_backend_this_machine_cannot_run_is_refused_before_any_folder_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let text = "[sweep]\nbackend = \"nccl\"\nop = \"allreduce\"\nmin_bytes = \"1K\"\n\
                max_bytes = \"4K\"\n[[criterion]]\nname = \"ok\"\nmax_wrong = 0\n";
    let c = write(tmp.path(), "c.toml", text);
    let out = tmp.path().join("acc");
    let r = accept(&[
        "--criteria",
        c.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    // Without the nccl feature: how to build it; with it but no GPU: what is missing.
    refused(&r, &["nccl"]);
    assert!(!out.exists(), "a refused accept created {}", out.display());
}
