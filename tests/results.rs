//! The results folder of a real sweep, checked file by file against docs/FORMATS.md: meta.json,
//! summary.csv, samples.csv and ranks.csv, how they join, the statistics they must satisfy, and
//! the live table on stdout.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use collbench::meta::RunStatus;
use collbench::model::record::PointRecord;
use common::{busbw_factor, csv_rows, expected_bytes, meta, run, series, summary, tempdir};

const LIMIT: Duration = Duration::from_secs(120);
const ITERS: usize = 7;
/// allreduce ring+tree, allgather ring; f32 and bf16; out of place and in place; 8 B to 16 KiB
/// by 4; world sizes 2 and 3 out of 3 ranks.
#[rustfmt::skip]
const ARGS: [&str; 22] = [
    "--op", "allreduce,allgather", "--algo", "ring,tree", "--dtype", "f32,bf16",
    "--in-place", "both", "--ranks", "3", "--world-sizes", "2,3",
    "-b", "8", "-e", "16K", "-f", "4", "--iters", "7", "--warmup", "3",
];

/// One sweep shared by the checks below (each test would otherwise repeat the launch).
fn the_sweep() -> &'static (
    tempfile::TempDir,
    std::path::PathBuf,
    common::Run,
    Vec<String>,
) {
    static SWEEP: std::sync::OnceLock<(
        tempfile::TempDir,
        std::path::PathBuf,
        common::Run,
        Vec<String>,
    )> = std::sync::OnceLock::new();
    SWEEP.get_or_init(|| {
        let _serial = common::serial();
        let (tmp, out) = tempdir();
        let mut args = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
        args.extend_from_slice(&ARGS);
        let r = run(&args, LIMIT);
        assert_eq!(r.code(), 0, "{}", r.stderr);
        let argv = std::iter::once(common::exe().to_string())
            .chain(args.iter().map(|a| a.to_string()))
            .collect();
        (tmp, out, r, argv)
    })
}

fn dir() -> &'static Path {
    &the_sweep().1
}

/// (op, algo, dtype, world, bytes, in_place) as the CSV files spell them.
fn key_of(r: &PointRecord) -> [String; 6] {
    let k = &r.key;
    [
        k.op.to_string(),
        k.algo.to_string(),
        k.dtype.to_string(),
        k.world.to_string(),
        k.bytes.to_string(),
        k.in_place.to_string(),
    ]
}

fn key_of_row(row: &BTreeMap<String, String>) -> [String; 6] {
    ["op", "algo", "dtype", "world", "bytes", "in_place"].map(|c| row[c].clone())
}

#[test]
fn meta_json_describes_the_run() {
    let (_, out, _, argv) = the_sweep();
    let m = meta(out);
    assert_eq!(m.schema, "collbench.meta/v1");
    assert_eq!(m.collbench_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(m.status, RunStatus::Complete);
    assert_eq!(m.error, None);
    assert_eq!(&m.command_line, argv);
    assert_eq!((m.backend.as_str(), m.transport.as_str()), ("host", "shm"));
    assert_eq!((m.ranks, m.nodes), (3, 1));
    assert_eq!(m.points, summary(out).len());
    let ended = m.ended.as_deref().expect("ended is set");
    let t = |s: &str| humantime::parse_rfc3339(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    assert!(t(&m.started) <= t(ended), "{} > {ended}", m.started);
    assert!(!m.host.hostname.is_empty() && m.host.hostname != "unknown");
    #[cfg(target_os = "linux")]
    assert!(m.host.os.starts_with("Linux "), "{}", m.host.os);
    assert_eq!(m.host.arch, std::env::consts::ARCH);
    assert!(m.host.cores >= 1 && m.host.mem_total_bytes > 0);
    assert!(m.host.mem_available_bytes <= m.host.mem_total_bytes);
    let files: Vec<(&str, &str)> = m
        .files
        .iter()
        .map(|(f, s)| (f.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        files,
        [
            ("meta.json", "collbench.meta/v1"),
            ("ranks.csv", "collbench.ranks/v1"),
            ("samples.csv", "collbench.samples/v1"),
            ("summary.csv", "collbench.summary/v1"),
        ]
    );
    for f in m.files.keys() {
        assert!(out.join(f).is_file(), "{f} is listed but missing");
    }
    assert!(!out.join("meta.json.tmp").exists());
    assert_eq!(m.options["iters"], ITERS);
    assert_eq!(m.options["world_sizes"], serde_json::json!([2, 3]));
}

#[test]
fn summary_has_exactly_the_planned_points() {
    let rows = summary(dir());
    let mut want = Vec::new();
    for world in [2usize, 3] {
        for (op, algo) in [
            ("allreduce", "ring"),
            ("allreduce", "tree"),
            ("allgather", "ring"),
        ] {
            for dtype in ["f32", "bf16"] {
                for in_place in [false, true] {
                    for s in series(8, 16 << 10, 4) {
                        let bytes = expected_bytes(op, dtype, s, world);
                        let k = [op, algo, dtype, &world.to_string(), &bytes.to_string()]
                            .map(String::from);
                        let [a, b, c, d, e] = k;
                        want.push([a, b, c, d, e, in_place.to_string()]);
                    }
                }
            }
        }
    }
    // Sizes holding less than one 16-byte block per rank are skipped (allgather: 8 B at 2
    // ranks in both dtypes, 8 and 32 B at 3 ranks in both), in each placement.
    want.retain(|k| k[4] != "0");
    let got: Vec<[String; 6]> = rows.iter().map(key_of).collect();
    // The plan's order is world, op, algo, dtype, placement, size.
    assert_eq!(got, want);
    assert_eq!(got.len(), 2 * 3 * 2 * 2 * 6 - 12);
    assert!(rows
        .iter()
        .all(|r| r.wrong == 0 && r.iters == ITERS && r.warmup == 3));
}

#[test]
fn statistics_and_bandwidths_are_consistent() {
    for r in summary(dir()) {
        let k = &r.key;
        let ctx = format!("{:?}", key_of(&r));
        assert!(r.time_us_min > 0.0, "{ctx}");
        assert!(r.time_us_min <= r.time_us_median, "{ctx}");
        assert!(r.time_us_median <= r.time_us_p95, "{ctx}");
        assert!(r.time_us_p95 <= r.time_us_p99, "{ctx}");
        assert!(r.time_us_p99 <= r.time_us_max, "{ctx}");
        assert!(r.time_us_min <= r.time_us_mean && r.time_us_mean <= r.time_us_max);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
        let algbw = k.bytes as f64 / (r.time_us_median * 1e3);
        assert!(close(r.algbw_gbps, algbw), "{ctx}: algbw {}", r.algbw_gbps);
        let factor = busbw_factor(k.op.name(), k.world);
        assert!(close(r.busbw_gbps, r.algbw_gbps * factor), "{ctx}");
        let mean_bw = k.bytes as f64 / (r.time_us_mean * 1e3) * factor;
        assert!(close(r.busbw_gbps_mean, mean_bw), "{ctx}");
        assert!(r.slowest_rank < k.world, "{ctx}");
    }
}

#[test]
fn samples_join_summary_rows() {
    let rows = summary(dir());
    let samples = csv_rows(&dir().join("samples.csv"));
    assert_eq!(samples.len(), rows.len() * ITERS);
    for (point, r) in rows.iter().enumerate() {
        let mine = &samples[point * ITERS..(point + 1) * ITERS];
        let times: Vec<f64> = mine.iter().map(|s| s["time_us"].parse().unwrap()).collect();
        for (i, s) in mine.iter().enumerate() {
            assert_eq!(s["point"], point.to_string());
            assert_eq!(s["iter"], i.to_string());
            assert_eq!(key_of_row(s), key_of(r), "point {point}");
            let fastest: f64 = s["fastest_us"].parse().unwrap();
            assert!(fastest <= times[i], "point {point} iter {i}");
            assert!(s["slowest_rank"].parse::<usize>().unwrap() < r.key.world);
        }
        // Times are written with round-trip precision, so the extremes match exactly.
        let max = times.iter().copied().fold(f64::MIN, f64::max);
        let min = times.iter().copied().fold(f64::MAX, f64::min);
        assert_eq!((r.time_us_min, r.time_us_max), (min, max), "point {point}");
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(r.time_us_median, sorted[ITERS / 2], "point {point}");
    }
}

#[test]
fn ranks_rows_cover_each_group() {
    let rows = summary(dir());
    let ranks = csv_rows(&dir().join("ranks.csv"));
    let want: usize = rows.iter().map(|r| r.key.world).sum();
    assert_eq!(ranks.len(), want);
    let mut at = 0;
    for (point, r) in rows.iter().enumerate() {
        let mut wrong = 0u64;
        for rank in 0..r.key.world {
            let row = &ranks[at];
            at += 1;
            assert_eq!(
                (row["point"].as_str(), row["rank"].as_str()),
                (point.to_string().as_str(), rank.to_string().as_str())
            );
            assert_eq!(key_of_row(row), key_of(r), "point {point}");
            let own_max: f64 = row["time_us_max"].parse().unwrap();
            assert!(own_max <= r.time_us_max, "point {point} rank {rank}");
            wrong += row["wrong"].parse::<u64>().unwrap();
        }
        assert_eq!(wrong, r.wrong, "point {point}");
    }
}

#[test]
fn the_table_has_one_row_per_point() {
    let (_, out, run, _) = the_sweep();
    let rows = summary(out);
    let table: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(table.len(), rows.len(), "{}", run.stdout);
    for (line, r) in table.iter().zip(&rows) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let k = &r.key;
        let place = if k.in_place { "in" } else { "out" };
        let redop = if k.op.name() == "allgather" {
            "none"
        } else {
            "sum"
        };
        let want = [
            k.bytes.to_string(),
            k.count.to_string(),
            k.dtype.to_string(),
            redop.to_string(),
            k.root.map_or("-1".into(), |r| r.to_string()),
            k.op.to_string(),
            k.algo.to_string(),
            k.world.to_string(),
            k.nodes.to_string(),
            place.to_string(),
        ];
        assert_eq!(cells.len(), 15, "{line}");
        assert_eq!(cells[..10], want, "{line}");
        assert_eq!(cells[14], "0", "{line}");
    }
    let notes: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("# note: "))
        .collect();
    let mut unique = notes.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(notes.len(), unique.len(), "repeated notes: {notes:?}");
    // 8 B of f32 over 3 ranks is less than a 16-byte block each: said once, not once per
    // placement.
    let skipped = "# note: allgather f32 at world 3: 8 B holds less than one 16-byte block per \
                   rank (nccl-tests' rule); skipped";
    assert!(notes.contains(&skipped), "{notes:?}");
    let last = run.stderr_lines();
    assert_eq!(
        last,
        [format!(
            "collbench: {} points written to {}",
            rows.len(),
            out.display()
        )]
    );
}

#[test]
fn a_folder_with_results_is_refused_and_left_alone() {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let args = [
        "--op",
        "allreduce",
        "--ranks",
        "2",
        "-b",
        "8",
        "-e",
        "64",
        "--iters",
        "2",
    ];
    common::sweep_ok(&args, &out, LIMIT);
    let before: Vec<Vec<u8>> = ["summary.csv", "meta.json", "samples.csv", "ranks.csv"]
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
    let mut again = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
    again.extend_from_slice(&args);
    let r = run(&again, LIMIT);
    assert_eq!(r.code(), 2, "{r:?}");
    let want = format!(
        "collbench: {} already holds results (summary.csv); choose another --out or remove it",
        out.display()
    );
    assert_eq!(r.stderr_lines(), [want]);
    assert_eq!(r.stdout, "");
    let after: Vec<Vec<u8>> = ["summary.csv", "meta.json", "samples.csv", "ranks.csv"]
        .iter()
        .map(|f| std::fs::read(out.join(f)).unwrap())
        .collect();
    assert!(before == after, "the earlier results were modified");
}

#[test]
fn without_out_the_folder_is_named_after_the_run() {
    let _serial = common::serial();
    let (tmp, _) = tempdir();
    let args = [
        "sweep",
        "--no-progress",
        "--op",
        "allgather,allreduce",
        "--ranks",
        "2",
    ];
    let mut cmd = common::command(&args);
    cmd.args(["-b", "64", "-e", "64", "--iters", "2"])
        .current_dir(tmp.path());
    let r = common::Spawned::start(cmd).finish(std::time::Instant::now(), LIMIT);
    assert_eq!(r.code(), 0, "{r:?}");
    let names: Vec<String> = std::fs::read_dir(tmp.path().join("results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    // YYYYMMDD-HHMMSS-<ops joined by +>-<backend>
    let name = &names[0];
    let (stamp, rest) = name.split_at(15);
    assert_eq!(rest, "-allgather+allreduce-host", "{name}");
    assert!(stamp.chars().enumerate().all(|(i, c)| if i == 8 {
        c == '-'
    } else {
        c.is_ascii_digit()
    }));
    assert_eq!(summary(&tmp.path().join("results").join(name)).len(), 2);
}

#[test]
fn a_closed_stdout_does_not_stop_the_measurement() {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let args = [
        "sweep",
        "--no-progress",
        "--op",
        "allreduce",
        "--ranks",
        "2",
    ];
    let mut cmd = common::command(&args);
    cmd.args([
        "-b",
        "8",
        "-e",
        "1M",
        "--iters",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let mut child = cmd.spawn().unwrap();
    drop(child.stdout.take()); // like `collbench sweep ... | head -1`
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(summary(&out).len(), 18);
    assert_eq!(meta(&out).status, RunStatus::Complete);
}
