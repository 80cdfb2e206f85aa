//! `collbench accept --expect` on a recorded host run: a profile's busbw floor past its
//! saturation size (met, and not met with the reason code), a run too small for it judged for
//! connectivity only and saying so, and the flags' refusals.

mod common;

use std::path::Path;

use common::accept::{accept, refused, write};
use common::recorded::Recorded;

/// One real sweep: AllReduce and AllGather on 2 host ranks, 1 KiB to 256 KiB.
fn recorded() -> &'static Path {
    static RUN: Recorded = Recorded::new();
    RUN.dir(
        &[
            "--op",
            "allreduce,allgather",
            "--ranks",
            "2",
            "-b",
            "1K",
            "-e",
            "256K",
            "--iters",
            "10",
            "--warmup",
            "2",
        ],
        common::accept::LIMIT,
    )
}

/// A per-node profile expecting `busbw` GB/s of AllReduce from `from` on.
fn profile(busbw: f64, from: &str) -> String {
    format!(
        "name = \"test-node\"\nper = \"node\"\n[[expect]]\nop = \"allreduce\"\n\
         busbw_gbps = {busbw}\nfrom_bytes = \"{from}\"\nsource = \"test#1\"\n"
    )
}

fn verdict(r: &common::Run) -> serde_json::Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"))
}

#[test]
fn a_met_expectation_passes_and_an_unmet_one_fails_as_bandwidth_low() {
    let tmp = tempfile::tempdir().unwrap();
    let run = recorded().to_str().unwrap();
    let easy = write(tmp.path(), "easy.toml", &profile(1e-6, "64K"));
    let r = accept(&["--expect", easy.to_str().unwrap(), "--run", run, "--json"]);
    assert_eq!(r.code(), 0, "{r:?}");
    let v = verdict(&r);
    let names: Vec<&str> = v["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["expect-correct", "expect-test-node-1-1nodes"]);
    // 64 KiB, 128 KiB and 256 KiB: the points past the saturation size, no smaller one.
    assert_eq!(
        v["criteria"][1]["points"].as_array().unwrap().len(),
        3,
        "{v}"
    );
    let hard = write(tmp.path(), "hard.toml", &profile(90_000.0, "64K"));
    let r = accept(&["--expect", hard.to_str().unwrap(), "--run", run, "--json"]);
    assert_eq!(r.code(), 1, "{r:?}");
    let v = verdict(&r);
    assert_eq!(v["reasons"][0]["code"], "bandwidth-low", "{v}");
    // The margin is applied: 10% below 90000.
    let threshold = v["criteria"][1]["points"][0]["checks"][0]["threshold"].as_f64();
    assert_eq!(threshold, Some(81_000.0), "{v}");
}

#[test]
fn a_run_below_the_saturation_size_is_judged_for_connectivity_only() {
    let tmp = tempfile::tempdir().unwrap();
    let far = write(tmp.path(), "far.toml", &profile(90_000.0, "1G"));
    let run = recorded().to_str().unwrap();
    let r = accept(&["--expect", far.to_str().unwrap(), "--run", run, "--json"]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stderr.contains("connectivity only"), "{r:?}");
    assert!(r.stderr.contains("below 1 GiB"), "{r:?}");
    let v = verdict(&r);
    assert_eq!(v["criteria"].as_array().unwrap().len(), 1, "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("connectivity only"), "{notes}");
}

#[test]
fn expect_flags_are_refused_in_one_line() {
    let run = recorded().to_str().unwrap();
    let r = accept(&["--expect", "ib-ndr-400", "--run", run]);
    refused(&r, &["ib-ndr-400", "--nics"]);
    let r = accept(&["--expect", "h100-nvswitch"]);
    refused(&r, &["--run DIR", "--criteria"]);
    let r = accept(&["--expect", "h100-nvswitch", "--margin", "2", "--run", run]);
    refused(&r, &["--margin 2"]);
    let r = accept(&["--expect", "no-such", "--run", run]);
    refused(&r, &["no-such", "h100-nvswitch"]);
    let r = accept(&["--nics", "8", "--criteria", "x.toml", "--run", run]);
    refused(&r, &["--nics"]);
}

#[test]
fn a_baseline_from_a_good_run_passes_that_run_and_sweeps_it_again() {
    let tmp = tempfile::tempdir().unwrap();
    let run = recorded().to_str().unwrap();
    let r = accept(&["--baseline-from", run, "--margin", "0.2"]);
    assert_eq!(r.code(), 0, "{r:?}");
    let text = r.stdout.clone();
    assert!(
        text.contains("[sweep]") && text.contains("backend = \"host\""),
        "{text}"
    );
    assert!(
        text.contains("min_bytes = 1024\nmax_bytes = 262144\nfactor = 2"),
        "{text}"
    );
    assert!(
        text.contains("-busbw\"") && text.contains("-latency\""),
        "{text}"
    );
    let criteria = write(tmp.path(), "baseline.toml", &text);
    let c = criteria.to_str().unwrap();
    // The run it was made from meets it: each threshold is its own value, loosened.
    let r = accept(&["--criteria", c, "--run", run, "--json"]);
    assert_eq!(r.code(), 0, "{r:?}");
    // Its [sweep] measures the same points again: a verdict (0, or 1 on a busy machine), judged
    // at every criterion, never "could not judge".
    let out = tmp.path().join("again");
    let r = accept(&["--criteria", c, "--out", out.to_str().unwrap(), "--json"]);
    assert!(r.code() == 0 || r.code() == 1, "{r:?}");
    let v = verdict(&r);
    assert_eq!(v["counts"]["criteria_no_data"], 0, "{v}");
    assert!(v["counts"]["criteria"].as_u64() > Some(1), "{v}");
    let r = accept(&["--baseline-from", run, "--margin", "-1"]);
    refused(&r, &["--margin -1"]);
    let r = accept(&["--baseline-from", "/nonexistent/run"]);
    refused(&r, &["/nonexistent/run"]);
    let r = accept(&["--baseline-from", run, "--expect", "h100-nvswitch"]);
    assert_eq!(r.code(), 2, "{r:?}");
}

#[test]
fn the_slowest_rank_bias_is_judged_from_samples_and_names_the_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let run = recorded().to_str().unwrap();
    // A bias is at most 1 (the same rank slowest in every iteration): this always passes.
    let text = "[[criterion]]\nname = \"no-straggler\"\nmax_slowest_bias = 1.0\n";
    let c = write(tmp.path(), "c.toml", text);
    let r = accept(&["--criteria", c.to_str().unwrap(), "--run", run, "--json"]);
    assert_eq!(r.code(), 0, "{r:?}");
    let v = verdict(&r);
    let check = &v["criteria"][0]["points"][0]["checks"][0];
    assert_eq!(check["check"], "max_slowest_bias", "{v}");
    let bias = check["measured"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&bias), "{v}");
    assert!(
        check["note"].as_str().unwrap().contains("slowest in"),
        "{v}"
    );
    let bad = write(
        tmp.path(),
        "bad.toml",
        "[[criterion]]\nmax_slowest_bias = -0.5\n",
    );
    let r = accept(&["--criteria", bad.to_str().unwrap(), "--run", run]);
    refused(&r, &["max_slowest_bias = -0.5"]);
}

#[test]
fn an_expect_table_in_a_criteria_file_works_as_the_flags_do() {
    let tmp = tempfile::tempdir().unwrap();
    let run = recorded().to_str().unwrap();
    write(tmp.path(), "node.toml", &profile(90_000.0, "64K"));
    // The profile path is relative to the criteria file; no [[criterion]] is needed.
    let text = "name = \"with-expect\"\n[expect]\nprofiles = [\"node.toml\"]\nmargin = 0.5\n";
    let c = write(tmp.path(), "c.toml", text);
    let r = accept(&["--criteria", c.to_str().unwrap(), "--run", run, "--json"]);
    assert_eq!(r.code(), 1, "{r:?}");
    let v = verdict(&r);
    let threshold = v["criteria"][1]["points"][0]["checks"][0]["threshold"].as_f64();
    assert_eq!(threshold, Some(45_000.0), "{v}");
    // --expect replaces the file's table.
    let easy = write(tmp.path(), "easy.toml", &profile(1e-6, "64K"));
    let args = [
        "--criteria",
        c.to_str().unwrap(),
        "--expect",
        easy.to_str().unwrap(),
    ];
    let r = accept(&[&args[..], &["--run", run]].concat());
    assert_eq!(r.code(), 0, "{r:?}");
    for (bad, want) in [
        (
            "[expect]\nprofiles = [\"node.toml\"]\nmargin = 2.0\n",
            "[expect]: margin 2",
        ),
        ("[expect]\nprofiles = []\n", "names no profile"),
        ("[expect]\nprofiles = [\"ib-ndr-400\"]\n", "give nics = N"),
        (
            "[expect]\nprofiles = [\"ib-ndr-400\"]\nnics = 500\n",
            "nics 500 is not from 1 to 64",
        ),
        ("[expect]\nprofile = [\"node.toml\"]\n", "profile"),
    ] {
        let c = write(tmp.path(), "bad.toml", bad);
        let r = accept(&["--criteria", c.to_str().unwrap(), "--run", run]);
        refused(&r, &["bad.toml", want]);
    }
}
