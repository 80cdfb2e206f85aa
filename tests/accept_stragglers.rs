//! `collbench accept` on a real run across two "nodes" (two ranks started as torchrun starts
//! them, on nodes named n0 and n1): verdict.json's `stragglers` section names ranks and nodes
//! by host, and `max_node_slowest_bias` judges the node slowest most often. For a node that is
//! slowest in every iteration, the run's samples.csv is given what such a node leaves there
//! (its rank in every row's `slowest_rank`): which rank a loaded machine makes slowest is not
//! something a test can count on.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::accept::judged;
use common::launch::{assert_all_succeeded, one_rank_per_node, sweep_args};

const LIMIT: Duration = Duration::from_secs(120);

/// A sweep of two ranks on nodes n0 and n1, into `out`.
fn two_node_run(out: &Path) {
    let extra = [
        "--op",
        "allreduce",
        "-b",
        "1K",
        "-e",
        "4K",
        "-n",
        "20",
        "-w",
        "2",
    ];
    let runs = one_rank_per_node(&["n0", "n1"], &sweep_args(out, &extra), LIMIT);
    assert_all_succeeded(&runs);
}

/// A copy of `run` in which rank `rank` is the slowest of every iteration.
fn slowest_always(run: &Path, rank: usize, into: PathBuf) -> PathBuf {
    fs::create_dir_all(&into).unwrap();
    for e in fs::read_dir(run).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), into.join(e.file_name())).unwrap();
    }
    let samples = into.join("samples.csv");
    let text = fs::read_to_string(&samples).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let col = header.split(',').position(|c| c == "slowest_rank").unwrap();
    let mut out = vec![header.to_string()];
    for line in lines {
        let mut cells: Vec<String> = line.split(',').map(str::to_string).collect();
        cells[col] = rank.to_string();
        out.push(cells.join(","));
    }
    fs::write(&samples, out.join("\n") + "\n").unwrap();
    into
}

#[test]
fn stragglers_are_in_the_verdict_and_a_node_slowest_in_every_iteration_fails() {
    let (tmp, dir) = common::tempdir();
    let run = dir.join("run");
    two_node_run(&run);
    // Every bias is at most 1: this passes, and the section describes the real run.
    let both = "[[criterion]]\nname = \"s\"\nmax_slowest_bias = 1.0\nmax_node_slowest_bias = 1.0\n";
    let (code, v) = judged(&tmp.path().join("v1"), &run, both);
    assert_eq!(code, 0, "{v}");
    let s = &v["stragglers"][0];
    assert_eq!(s["run"], run.to_str().unwrap(), "{v}");
    assert_eq!(
        (s["points"].as_u64(), s["iterations"].as_u64()),
        (Some(3), Some(60)),
        "{v}"
    );
    for node in s["nodes"].as_array().unwrap() {
        let host = node["host"].as_str().unwrap();
        assert!(["n0", "n1"].contains(&host), "{v}");
        assert_eq!(node["chance"], 0.5, "{v}");
    }
    let slowest: u64 = (s["ranks"].as_array().unwrap().iter())
        .map(|r| r["slowest"].as_u64().unwrap())
        .sum();
    assert_eq!(slowest, 60, "every iteration has one slowest rank: {v}");
    let node_check = &v["criteria"][0]["points"][0]["checks"][1];
    assert_eq!(node_check["check"], "max_node_slowest_bias", "{v}");
    let bias = node_check["measured"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&bias), "{v}");

    // n1's rank slowest in every iteration: bias 1 at every point, named by host.
    let slow = slowest_always(&run, 1, dir.join("slow"));
    let (code, v) = judged(
        &tmp.path().join("v2"),
        &slow,
        "[[criterion]]\nmax_node_slowest_bias = 0.5\n",
    );
    assert_eq!(code, 1, "{v}");
    let reasons = &v["reasons"][0];
    assert_eq!(
        (reasons["code"].as_str(), reasons["count"].as_u64()),
        (Some("node-slow"), Some(3)),
        "{v}"
    );
    assert_eq!(reasons["names"][0], "node 1 (n1)", "{v}");
    let check = &v["criteria"][0]["points"][0]["checks"][0];
    assert_eq!(check["measured"], 1.0, "{v}");
    assert_eq!(check["culprit"]["host"], "n1", "{v}");
    let node = &v["stragglers"][0]["nodes"][0];
    assert_eq!(
        (node["host"].as_str(), node["persistent"].as_bool()),
        (Some("n1"), Some(true)),
        "{v}"
    );
    let notes = v["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains(
                "node 1 (n1) persistently slowest: 100% of 60 iterations (50% by chance)"
            )),
        "{v}"
    );
}
