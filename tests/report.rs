//! `collbench report` on a real sweep: one self-contained HTML page with every section, inline
//! SVG figures and no reference to anything outside the file; a verdict file is shown; bad
//! input is one line and exit 2. When Chromium is installed, the page is also rendered by
//! scripts/check_report.sh.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use common::{run, serial, sweep_ok, Run};

const LIMIT: Duration = Duration::from_secs(120);

/// One real sweep shared by the tests: ring AllReduce at worlds 2 and 3, 1 KiB to 64 KiB.
fn real_run() -> &'static Path {
    static DIR: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &DIR.get_or_init(|| {
        let _guard = serial();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        sweep_ok(
            &[
                "--op",
                "allreduce",
                "--ranks",
                "3",
                "--world-sizes",
                "2,3",
                "-b",
                "1K",
                "-e",
                "64K",
                "--iters",
                "10",
                "--warmup",
                "2",
            ],
            &out,
            LIMIT,
        );
        (tmp, out)
    })
    .1
}

fn report(args: &[&str]) -> Run {
    let mut full = vec!["report"];
    full.extend_from_slice(args);
    run(&full, LIMIT)
}

/// The structure every report has.
fn assert_structure(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(html.trim_end().ends_with("</html>"));
    assert!(html.contains("<meta charset=\"utf-8\">"));
    for id in [
        "summary",
        "verdict",
        "figures",
        "fit",
        "points",
        "stragglers",
        "soak",
        "environment",
    ] {
        assert_eq!(
            html.matches(&format!("<section id=\"{id}\">")).count(),
            1,
            "section {id}"
        );
        assert!(
            html.contains(&format!("<a href=\"#{id}\">")),
            "link to {id}"
        );
    }
    assert_eq!(
        html.matches("<section").count(),
        html.matches("</section>").count()
    );
    // Four figures of one op over two worlds, each an inline SVG inside a <figure>.
    assert_eq!(html.matches("<svg").count(), 4, "inline SVG figures");
    assert_eq!(html.matches("</svg>").count(), 4);
    assert_eq!(html.matches("<figure id=\"fig-").count(), 4);
    for id in [
        "busbw-allreduce",
        "latency-allreduce",
        "busbw-vs-world-allreduce",
        "latency-vs-world-allreduce",
    ] {
        assert!(html.contains(&format!("<figure id=\"fig-{id}\">")), "{id}");
    }
    // Self-contained: no URL, no external script, style sheet, image or frame.
    let lower = html.to_ascii_lowercase();
    for bad in [
        "http://", "https://", "<script", "<link", "<img", "<iframe", "src=", "@import", "url(",
    ] {
        assert!(!lower.contains(bad), "the page holds '{bad}'");
    }
    // Tables: the summary, the points (one row per point), the fit.
    assert!(html.contains("<th>median (µs)</th>"));
    assert!(html.contains("<th>bandwidth (GB/s)</th>"));
    assert!(html.contains("peak busbw, allreduce"));
}

#[test]
fn a_real_sweep_makes_a_self_contained_page() {
    let dir = real_run();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("page.html");
    let r = report(&[dir.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{r:?}");
    assert!(r.stderr.contains("report written to"), "{}", r.stderr);
    let html = fs::read_to_string(&out).unwrap();
    assert_structure(&html);
    let points = common::summary(dir).len();
    // One table row per point, plus the summary's and the fit's rows.
    assert!(html.matches("<tr>").count() > points);
    assert!(html.contains("Fitted on the fly"));
    assert!(html.contains("No verdict given"));
    let meta = common::meta(dir);
    assert!(html.contains(&meta.host.hostname));
    assert!(html.contains("host.cpu_model"));
    assert!(html.contains("Sweep options"));
    // Stragglers from samples.csv: 7 sizes at worlds 2 and 3, 10 iterations each.
    assert!(html.contains("140 iterations of 14 points"), "stragglers");
    assert!(html.contains("<h3>Ranks</h3>") && html.contains("<th>slowest in</th>"));
    check_in_chromium(&out);
}

#[test]
fn fit_and_verdict_files_are_shown() {
    let dir = real_run();
    let tmp = tempfile::tempdir().unwrap();
    let fit = tmp.path().join("fit.json");
    let r = run(
        &["fit", dir.to_str().unwrap(), "-o", fit.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(r.code(), 0, "{r:?}");
    // A real verdict: one criterion that passes, one that cannot.
    let criteria = tmp.path().join("criteria.toml");
    fs::write(
        &criteria,
        "name = \"report-test\"\n\
         [[criterion]]\nname = \"correct\"\nmax_wrong = 0\n\
         [[criterion]]\nname = \"impossible-busbw\"\nmin_bytes = \"16K\"\nmin_busbw_gbps = 1000.0\n",
    )
    .unwrap();
    let acc = tmp.path().join("accept");
    let r = run(
        &[
            "accept",
            "--criteria",
            criteria.to_str().unwrap(),
            "--run",
            dir.to_str().unwrap(),
            "--out",
            acc.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 1, "the verdict should fail: {r:?}");
    let verdict = acc.join("verdict.json");
    // Default output: RUN/report.html. Use a copy so the shared run stays as it was.
    let copy = tmp.path().join("run");
    fs::create_dir_all(&copy).unwrap();
    for f in ["meta.json", "summary.csv", "samples.csv", "ranks.csv"] {
        fs::copy(dir.join(f), copy.join(f)).unwrap();
    }
    let r = report(&[
        copy.to_str().unwrap(),
        "--fit",
        fit.to_str().unwrap(),
        "--verdict",
        verdict.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    let html = fs::read_to_string(copy.join("report.html")).unwrap();
    assert_structure(&html);
    assert!(html.contains("<span class=\"badge fail\">FAIL</span>"));
    assert!(html.contains("<th>margin</th>"));
    assert!(html.contains("Checks that failed or could not be judged"));
    assert!(html.contains("<tr class=\"fail\"><td>impossible-busbw ("));
    assert!(html.contains("<tr class=\"pass\"><td>correct ("));
    assert!(html.contains("report-test"));
    assert!(html.contains(&format!("From {}", fit.display())));
    assert!(html.contains("alpha-beta fit (dashed)"));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = real_run();
    let d = dir.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let refused = |r: Run, names: &[&str]| {
        assert_eq!(r.code(), 2, "{r:?}");
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        let lines = r.stderr_lines();
        assert_eq!(lines.len(), 1, "one line expected: {}", r.stderr);
        for n in names {
            assert!(lines[0].contains(n), "'{n}' missing from: {}", lines[0]);
        }
    };
    refused(report(&["/nonexistent/run"]), &["/nonexistent/run"]);
    let page = tmp.path().join("p.html");
    let p = page.to_str().unwrap();
    let summary = dir.join("summary.csv");
    let s = summary.to_str().unwrap();
    refused(
        report(&[d, "-o", p, "--verdict", s]),
        &["summary.csv", "JSON"],
    );
    let fit_like = tmp.path().join("fit.json");
    fs::write(&fit_like, r#"{"schema": "collbench.fit/v1"}"#).unwrap();
    refused(
        report(&[d, "-o", p, "--verdict", fit_like.to_str().unwrap()]),
        &["collbench.fit/v1", "verdict"],
    );
    refused(report(&[d, "-o", p, "--fit", s]), &["summary.csv"]);
    refused(
        report(&[d, "-o", "/nonexistent/dir/r.html"]),
        &["/nonexistent/dir", "does not exist"],
    );
    assert!(!page.exists(), "nothing written on refusal");
}

/// Renders the page with scripts/check_report.sh when Chromium is installed.
fn check_in_chromium(page: &Path) {
    let have = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .any(|b| common::skip::on_path(b));
    let missing = (!have).then(|| {
        "Chromium is not installed (apt-get install chromium); HTML checked without it".to_string()
    });
    if !common::skip::can_use("chromium", missing) {
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_report.sh");
    let shot = page.with_extension("png");
    let out = std::process::Command::new(script)
        .arg(page)
        .arg(&shot)
        .output()
        .expect("running scripts/check_report.sh");
    assert!(
        out.status.success(),
        "check_report.sh failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::metadata(&shot)
        .map(|m| m.len() > 10_000)
        .unwrap_or(false));
}

/// The cells of every row of the points table of `op`.
fn points_rows(html: &str, op: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("<h3 id=\"points-{op}\">"))
        .unwrap_or_else(|| panic!("no points table of {op}"));
    let table = &html[start..];
    let table = &table[..table.find("</table>").expect("the table ends")];
    table
        .split("<tr>")
        .skip(2) // the text before the header, and the header
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = cell.split_once('>').map_or("", |c| c.1);
                    text.split("</td>").next().unwrap_or("").to_string()
                })
                .collect()
        })
        .collect()
}

/// Whether `shown` is `value` to the digits shown.
fn shows(shown: &str, value: f64) -> bool {
    let decimals = shown.split_once('.').map_or(0, |d| d.1.len()) as i32;
    let tol = 0.5 * 10f64.powi(-decimals) * (1.0 + 1e-9) + 1e-12;
    shown.parse::<f64>().is_ok_and(|v| (v - value).abs() <= tol)
}

#[test]
fn the_points_table_shows_summary_csv_s_numbers() {
    let dir = real_run();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("page.html");
    let r = report(&[dir.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{r:?}");
    let html = fs::read_to_string(&out).unwrap();
    let rows = common::summary(dir);
    let table = points_rows(&html, "allreduce");
    assert_eq!(table.len(), rows.len(), "one table row per point");
    for p in &rows {
        let k = &p.key;
        let size = collbench::units::format_size(k.bytes);
        let place = if k.in_place { "yes" } else { "no" };
        let row = table
            .iter()
            .find(|c| {
                c[0] == k.algo.to_string()
                    && c[1] == k.dtype.to_string()
                    && c[2] == k.world.to_string()
                    && c[4] == size
                    && c[5] == place
            })
            .unwrap_or_else(|| panic!("no table row for {k:?}"));
        assert!(
            shows(&row[7], p.time_us_median),
            "median {} vs {}",
            row[7],
            p.time_us_median
        );
        assert!(
            shows(&row[8], p.time_us_mean),
            "mean {} vs {}",
            row[8],
            p.time_us_mean
        );
        assert!(
            shows(&row[13], p.busbw_gbps),
            "busbw {} vs {}",
            row[13],
            p.busbw_gbps
        );
        assert_eq!(row[15], p.wrong.to_string());
    }
}
