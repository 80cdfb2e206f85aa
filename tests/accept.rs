//! `collbench accept` on a recorded run of the host backend (criteria set to pass and to fail)
//! and on bad criteria: exit 0 pass, 1 fail, 2 could not judge, with verdict.json and well-formed
//! JUnit XML. Sweeps that accept runs itself are in accept_sweeps.rs.

mod common;

use std::fs;
use std::path::Path;

use common::accept::{accept, refused, write, LIMIT};
use common::recorded::Recorded;

/// One real sweep shared by the tests: ring AllReduce and AllGather, 2 ranks, 1 KiB to 64 KiB.
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
            "64K",
            "--iters",
            "20",
            "--warmup",
            "3",
        ],
        LIMIT,
    )
}

/// Criteria that every sane run passes (or fails, with `fail`), judging the recorded run.
fn criteria(fail: bool) -> String {
    let bw = if fail { 1e6 } else { 1e-6 };
    format!(
        "name = \"test\"\n\
         [[criterion]]\nname = \"bw & <large>\"\nop = \"allreduce\"\nmin_bytes = \"16K\"\n\
         min_busbw_gbps = {bw}\nmax_cv = 1000.0\nmax_rank_skew = 1000.0\nmax_node_skew = 1000.0\n\
         [[criterion]]\nname = \"correct\"\nmax_wrong = 0\n\
         [[criterion]]\nname = \"latency\"\nmax_bytes = \"4K\"\nmax_time_us = 1e6\nstat = \"worst\"\n"
    )
}

/// Parses JUnit XML with a real parser and returns (testcases, failures, errors) as counted
/// from the elements, checking them against the root's attributes.
fn junit_counts(path: &Path) -> (usize, usize, usize) {
    let text = fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let count = |tag: &str| doc.descendants().filter(|n| n.has_tag_name(tag)).count();
    let (t, f, e) = (count("testcase"), count("failure"), count("error"));
    let attr = |name: &str| root.attribute(name).unwrap().parse::<usize>().unwrap();
    assert_eq!((attr("tests"), attr("failures"), attr("errors")), (t, f, e));
    for tc in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        assert!(tc.attribute("name").is_some() && tc.attribute("classname").is_some());
    }
    (t, f, e)
}

fn verdict_json(path: &Path) -> serde_json::Value {
    common::read_json(path)
}

#[test]
fn a_recorded_run_passes_lenient_criteria() {
    let tmp = tempfile::tempdir().unwrap();
    let c = write(tmp.path(), "c.toml", &criteria(false));
    let out = tmp.path().join("v");
    let run_dir = recorded().to_str().unwrap();
    let r = accept(&[
        "--criteria",
        c.to_str().unwrap(),
        "--run",
        run_dir,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stdout.contains("verdict: PASS"), "{}", r.stdout);
    for col in ["criterion", "measured", "threshold", "margin", "result"] {
        assert!(
            r.stdout.lines().next().unwrap().contains(col),
            "{}",
            r.stdout
        );
    }
    let v = verdict_json(&out.join("verdict.json"));
    assert_eq!(v["schema"], "collbench.verdict/v1");
    assert_eq!(
        (v["result"].as_str(), v["exit_code"].as_u64()),
        (Some("pass"), Some(0))
    );
    // 1 KiB..64 KiB is 7 sizes: allreduce 16K..64K = 3 points, 14 points, 2 ops × 3 sizes <= 4K.
    let points = |i: usize| v["criteria"][i]["points"].as_array().unwrap().len();
    assert_eq!((points(0), points(1), points(2)), (3, 14, 6));
    let chk = &v["criteria"][0]["points"][0]["checks"][0];
    assert_eq!(chk["check"], "min_busbw_gbps");
    assert!(chk["measured"].as_f64().unwrap() > 0.0 && chk["margin_pct"].as_f64().unwrap() > 0.0);
    assert_eq!(junit_counts(&out.join("junit.xml")), (23, 0, 0));
}

#[test]
fn a_recorded_run_fails_strict_criteria_and_names_the_slow_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let c = write(tmp.path(), "c.toml", &criteria(true));
    let junit = tmp.path().join("j.xml");
    let run_dir = recorded().to_str().unwrap();
    let r = accept(&[
        "--criteria",
        c.to_str().unwrap(),
        "--run",
        run_dir,
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 1, "{r:?}");
    assert!(r.stdout.contains("verdict: FAIL"), "{}", r.stdout);
    let row = r
        .stdout
        .lines()
        .find(|l| l.contains("min_busbw_gbps"))
        .unwrap();
    assert!(
        row.contains("FAIL") && row.contains("bandwidth-low; slowest rank"),
        "{row}"
    );
    assert!(row.contains("-100.0%"), "margin of a 1e6 GB/s floor: {row}");
    // The escaped criterion name survives the round trip through XML.
    let (t, f, e) = junit_counts(&junit);
    assert_eq!((t, f, e), (23, 3, 0));
    let text = fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("name"), Some("bw & <large>"));
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .unwrap();
    assert!(failure
        .attribute("message")
        .unwrap()
        .contains("min_busbw_gbps"));
    // The reason code a CI system can route on.
    assert_eq!(failure.attribute("type"), Some("bandwidth-low"));
}

#[test]
fn json_output_is_the_verdict_and_repeats_use_the_statistic() {
    let tmp = tempfile::tempdir().unwrap();
    let c = write(tmp.path(), "c.toml", &criteria(false));
    let run_dir = recorded().to_str().unwrap();
    let r = accept(&[
        "--criteria",
        c.to_str().unwrap(),
        "--run",
        run_dir,
        "--run",
        run_dir,
        "--json",
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("stdout is one JSON object");
    assert_eq!(v["repeats"], 2);
    let values = v["criteria"][0]["points"][0]["checks"][0]["values"]
        .as_array()
        .unwrap();
    assert_eq!(values.len(), 2);
    assert_eq!(values[0], values[1]);
}

#[test]
fn a_window_matching_no_point_is_reported_and_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "{}[[criterion]]\nname = \"huge\"\nmin_bytes = \"1G\"\nmin_busbw_gbps = 1\n",
        criteria(false)
    );
    let c = write(tmp.path(), "c.toml", &text);
    let out = tmp.path().join("v");
    let run_dir = recorded().to_str().unwrap();
    let r = accept(&[
        "--criteria",
        c.to_str().unwrap(),
        "--run",
        run_dir,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 2, "{r:?}");
    let row = r.stdout.lines().find(|l| l.starts_with("huge")).unwrap();
    assert!(row.contains("NO DATA"), "{row}");
    assert!(
        r.stdout.contains("verdict: COULD NOT JUDGE"),
        "{}",
        r.stdout
    );
    let line = r
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains("'huge'"))
        .unwrap();
    assert!(
        line.contains("matched no measured point") && line.contains("1 GiB"),
        "{line}"
    );
    let v = verdict_json(&out.join("verdict.json"));
    assert_eq!(v["exit_code"], 2);
    // The unmatched criterion is a no-data reason, named.
    let no_data = v["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["code"] == "no-data");
    assert_eq!(
        no_data.unwrap()["criteria"],
        serde_json::json!(["huge"]),
        "{v}"
    );
    let (_, _, errors) = junit_counts(&out.join("junit.xml"));
    assert_eq!(errors, 1);
}

#[test]
fn bad_criteria_are_one_line_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = recorded().to_str().unwrap();
    let cases: [(&str, &[&str]); 5] = [
        (
            "[[criterion]]\nmax_cv = 1\nmin_busbw = 5\n",
            &["c.toml", "line 3", "min_busbw"],
        ),
        (
            "[[criterion]]\nname = \"n\"\nmin_busbw_gbps = -5\n",
            &["criterion 'n'", "min_busbw_gbps = -5"],
        ),
        (
            "[[criterion]]\nname = \"n\"\nmax_cv = -0.1\n",
            &["criterion 'n'", "max_cv"],
        ),
        (
            "[[criterion]]\nname = \"w\"\nmin_bytes = \"1M\"\nmax_bytes = \"1K\"\nmax_cv = 1\n",
            &[
                "criterion 'w'",
                "min_bytes 1 MiB is larger than max_bytes 1 KiB",
            ],
        ),
        (
            "[[criterion]]\nname = \"s\"\nmax_cv = 1\nstat = \"typical\"\n",
            &["criterion 's'", "stat 'typical'"],
        ),
    ];
    for (text, names) in cases {
        let c = write(tmp.path(), "c.toml", text);
        let r = accept(&["--criteria", c.to_str().unwrap(), "--run", run_dir]);
        refused(&r, names);
    }
    let r = accept(&[
        "--criteria",
        tmp.path().join("missing.toml").to_str().unwrap(),
        "--run",
        run_dir,
    ]);
    refused(&r, &["missing.toml"]);
    let c = write(tmp.path(), "c.toml", "[[criterion]]\nmax_cv = 1\n");
    let r = accept(&["--criteria", c.to_str().unwrap()]);
    refused(&r, &["c.toml", "no [sweep] table", "--run"]);
    let r = accept(&[
        "--criteria",
        c.to_str().unwrap(),
        "--run",
        run_dir,
        "--repeat",
        "2",
    ]);
    refused(&r, &["--repeat", "--run"]);
    let r = accept(&["--criteria", c.to_str().unwrap(), "--repeat", "0"]);
    refused(&r, &["--repeat"]);
    let r = accept(&[
        "--criteria",
        c.to_str().unwrap(),
        "--run",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 2, "{r:?}");
}
