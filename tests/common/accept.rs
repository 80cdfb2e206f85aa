//! Running `collbench accept` for the accept test files, and the shape of its refusals.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{recorded, Run};

/// The hang limit of one accept: it may run a sweep of its own.
pub const LIMIT: Duration = Duration::from_secs(120);

/// Writes `text` to `dir/name` (a criteria file) and returns its path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, text).unwrap();
    p
}

/// `collbench accept args`, waited for up to [`LIMIT`].
pub fn accept(args: &[&str]) -> Run {
    super::run_cmd("accept", args, LIMIT)
}

/// Exit 2 with exactly one line on stderr holding every `names`, nothing on stdout.
pub fn refused(r: &Run, names: &[&str]) {
    recorded::refused(r, names);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}

/// `accept --criteria TEXT --run RUN --out OUT` (the criteria written beside OUT, which must
/// not exist): its exit code and the verdict.json it wrote.
pub fn judged(out: &Path, run: &Path, criteria_text: &str) -> (i32, serde_json::Value) {
    let criteria = out.with_extension("toml");
    fs::write(&criteria, criteria_text).unwrap();
    let r = accept(&[
        "--criteria",
        criteria.to_str().unwrap(),
        "--run",
        run.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let text =
        fs::read_to_string(out.join("verdict.json")).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    (r.code(), serde_json::from_str(&text).unwrap())
}

/// A failed results folder: meta.json's `failure` is `code` naming `rank` (`rank 2`), and
/// `collbench accept` of it gives verdict.json's reasons `code` naming `rank`, beside
/// `run-incomplete`.
pub fn assert_run_cause(run: &Path, code: &str, rank: &str) {
    let meta = super::read_json(&run.join("meta.json"));
    assert_eq!(meta["failure"]["cause"], code, "{meta}");
    let recorded = format!("rank {}", meta["failure"]["rank"]);
    assert!(
        rank == recorded || rank.starts_with(&format!("{recorded} (")),
        "{rank} against {meta}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let verdict = tmp.path().join("v");
    let (code_of_accept, v) = judged(&verdict, run, "[[criterion]]\nmax_wrong = 0\n");
    assert_ne!(code_of_accept, 0, "{v}");
    assert_eq!(v["runs"][0]["failure"], meta["failure"], "{v}");
    let reasons = v["reasons"].as_array().unwrap();
    let found = reasons.iter().find(|x| x["code"] == code);
    let found = found.unwrap_or_else(|| panic!("no {code} in {v}"));
    let name = found["names"][0].as_str().unwrap();
    assert!(name.starts_with(&format!("{rank} in ")), "{name}");
    assert!(reasons.iter().any(|x| x["code"] == "run-incomplete"), "{v}");
    // JUnit: the folder is an error of its own, with both codes.
    let junit = fs::read_to_string(verdict.join("junit.xml")).unwrap();
    let want = format!("<error type=\"run-incomplete,{code}\" message=\"status failed: ");
    assert!(junit.contains(&want), "{junit}");
    assert!(
        junit.contains("<testsuite name=\"results folders\" tests=\"1\""),
        "{junit}"
    );
}
