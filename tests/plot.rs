//! `collbench plot` on a real sweep of the host backend, a fit of it and a projection: the
//! figures exist, have the expected size, are not blank, and name their series and axes; bad
//! input is one line and exit 2.

mod common;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use common::{run, serial, sweep_ok, Run};

const LIMIT: Duration = Duration::from_secs(120);

/// One real sweep and its fit, shared by the tests: ring AllReduce and AllGather at worlds 2
/// and 3, 1 KiB to 256 KiB, few iterations.
fn real_run() -> &'static (PathBuf, PathBuf) {
    static DIR: OnceLock<(tempfile::TempDir, (PathBuf, PathBuf))> = OnceLock::new();
    &DIR.get_or_init(|| {
        let _guard = serial();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        sweep_ok(
            &[
                "--op",
                "allreduce,allgather",
                "--ranks",
                "3",
                "--world-sizes",
                "2,3",
                "-b",
                "1K",
                "-e",
                "256K",
                "--iters",
                "10",
                "--warmup",
                "2",
            ],
            &out,
            LIMIT,
        );
        let fit = tmp.path().join("fit.json");
        let r = run(
            &["fit", out.to_str().unwrap(), "-o", fit.to_str().unwrap()],
            LIMIT,
        );
        assert_eq!(r.code(), 0, "{r:?}");
        (tmp, (out, fit))
    })
    .1
}

fn plot(args: &[&str]) -> Run {
    common::run_cmd("plot", args, LIMIT)
}

/// Decodes a PNG: (width, height, RGB pixels).
fn decode(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap_or_else(|e| panic!("{} is not a PNG: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    assert!(step >= 3, "{}: {:?}", path.display(), info.color_type);
    let px = buf[..info.buffer_size()]
        .chunks(step)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (info.width, info.height, px)
}

/// A figure is drawn: the expected size, mostly white with enough ink, text (grey
/// anti-aliasing gives many colours) and the first palette colour (the first series).
fn assert_drawn(path: &Path) {
    let (w, h, px) = decode(path);
    assert_eq!((w, h), (960, 600), "{}", path.display());
    let ink = px.iter().filter(|p| **p != [255, 255, 255]).count();
    let frac = ink as f64 / px.len() as f64;
    assert!(
        (0.02..0.6).contains(&frac),
        "{}: {frac} of the pixels are not white",
        path.display()
    );
    let colours: HashSet<[u8; 3]> = px.iter().copied().collect();
    assert!(
        colours.len() > 30,
        "{}: {} colours",
        path.display(),
        colours.len()
    );
    assert!(
        colours.contains(&[31, 119, 180]),
        "{}: the first series' colour is missing",
        path.display()
    );
}

fn refused(r: &Run, names: &[&str]) {
    assert_eq!(r.code(), 2, "{r:?}");
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "one line expected: {}", r.stderr);
    for n in names {
        assert!(lines[0].contains(n), "'{n}' missing from: {}", lines[0]);
    }
}

const FIGURES: [&str; 8] = [
    "busbw-allreduce",
    "latency-allreduce",
    "busbw-vs-world-allreduce",
    "latency-vs-world-allreduce",
    "busbw-allgather",
    "latency-allgather",
    "busbw-vs-world-allgather",
    "latency-vs-world-allgather",
];

#[test]
fn figures_of_a_real_sweep_with_its_fit() {
    let (dir, fit) = real_run();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("figs");
    let r = plot(&[
        dir.to_str().unwrap(),
        "--fit",
        fit.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    for name in FIGURES {
        assert_drawn(&out.join(format!("{name}.png")));
        let svg = fs::read_to_string(out.join(format!("{name}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{name}");
        assert!(svg.contains("font-family=\"sans-serif\""), "{name}");
    }
    assert_eq!(r.stdout.lines().count(), 16, "{}", r.stdout);
    let svg = |n: &str| fs::read_to_string(out.join(format!("{n}.svg"))).unwrap();
    let lat = svg("latency-allreduce");
    for want in [
        "ring, world 2",
        "ring, world 3",
        "alpha-beta fit (dashed)",
        "message size S (bytes",
        "time per call (µs",
        "AllReduce time per call by message size",
        "1 KiB",
        "256 KiB",
    ] {
        assert!(lat.contains(want), "latency-allreduce.svg lacks '{want}'");
    }
    assert!(lat.contains("stroke-dasharray") || lat.matches("<polyline").count() > 4);
    let bw = svg("busbw-allgather");
    assert!(bw.contains("bus bandwidth (GB/s"), "busbw axis label");
    let world = svg("busbw-vs-world-allreduce");
    for want in [
        "world size p (ranks)",
        "ring, 1 KiB",
        "ring, 256 KiB",
        "cross-world model",
    ] {
        assert!(
            world.contains(want),
            "busbw-vs-world-allreduce.svg lacks '{want}'"
        );
    }
}

#[test]
fn default_folder_formats_and_sizes() {
    let (dir, _) = real_run();
    // A copy, so that the default plots/ folder lands in a folder of this test.
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("run");
    fs::create_dir_all(&copy).unwrap();
    for f in ["meta.json", "summary.csv", "samples.csv", "ranks.csv"] {
        fs::copy(dir.join(f), copy.join(f)).unwrap();
    }
    let r = plot(&[copy.to_str().unwrap(), "--format", "svg", "--sizes", "4K"]);
    assert_eq!(r.code(), 0, "{r:?}");
    let plots = copy.join("plots");
    assert!(plots.join("busbw-allreduce.svg").is_file());
    assert!(!plots.join("busbw-allreduce.png").exists());
    let world = fs::read_to_string(plots.join("latency-vs-world-allgather.svg")).unwrap();
    assert!(world.contains("ring, 4 KiB"), "--sizes 4K not drawn");
    assert!(!world.contains("ring, 1 KiB"));
    // Without a fit there are no dashed lines or their legend entry.
    let lat = fs::read_to_string(plots.join("latency-allreduce.svg")).unwrap();
    assert!(!lat.contains("alpha-beta fit"));
}

#[test]
fn an_op_with_more_lines_than_colours_is_split_by_root() {
    let _guard = serial();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // 3 roots x 2 placements x 2 algorithms = 12 lines of Gather, over the 10 colours.
    let args = [
        "--op",
        "gather",
        "--ranks",
        "3",
        "--root",
        "all",
        "--in-place",
        "both",
    ];
    let sizes = [
        "--algo",
        "binomial,linear",
        "-b",
        "1K",
        "-e",
        "4K",
        "--iters",
        "3",
    ];
    sweep_ok(&[&args[..], &sizes[..]].concat(), &out, LIMIT);
    let r = plot(&[out.to_str().unwrap(), "--format", "svg"]);
    assert_eq!(r.code(), 0, "{r:?}");
    let plots = out.join("plots");
    assert!(!plots.join("busbw-gather.svg").exists());
    for root in 0..3 {
        let fig = fs::read_to_string(plots.join(format!("busbw-gather-root{root}.svg"))).unwrap();
        assert!(
            fig.contains(&format!("(root {root})")),
            "title names the root"
        );
        assert!(
            fig.contains("binomial, world 3, in place"),
            "legend names the lines"
        );
        assert!(
            !fig.contains("root 0,") && !fig.contains(", root"),
            "no root in labels"
        );
    }
}

#[test]
fn projection_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("proj");
    let r = run(
        &[
            "project",
            "--profile",
            "h100-ib400",
            "--model",
            "llama2-7b",
            "--world-sizes",
            "8,16,...,256",
            "--tp",
            "1,2",
            "--out",
            proj.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(r.code(), 0, "{r:?}");
    let r = plot(&["--projection", proj.to_str().unwrap()]);
    assert_eq!(r.code(), 0, "{r:?}");
    let plots = proj.join("plots");
    for (name, label) in [
        ("projection-throughput", "tokens per second (all GPUs)"),
        ("projection-throughput-per-gpu", "tokens per second per GPU"),
        ("projection-mfu", "MFU (% of peak FLOP/s)"),
        ("projection-tokens-per-joule", "tokens per joule"),
        (
            "projection-scaling-efficiency",
            "SE(N) (% of the layout at its smallest world)",
        ),
    ] {
        assert_drawn(&plots.join(format!("{name}.png")));
        let svg = fs::read_to_string(plots.join(format!("{name}.svg"))).unwrap();
        for want in [
            label,
            "GPUs (world size)",
            "tp 1, pp 1",
            "tp 2, pp 1",
            "llama2-7b",
        ] {
            assert!(svg.contains(want), "{name}.svg lacks '{want}'");
        }
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let (dir, fit) = real_run();
    let d = dir.to_str().unwrap();
    refused(&plot(&[]), &["results folders", "--projection"]);
    refused(&plot(&[d, "--format", "png,jpg"]), &["--format", "'jpg'"]);
    refused(&plot(&[d, "--sizes", "4K,0"]), &["--sizes", "'0'"]);
    refused(&plot(&["/nonexistent/run"]), &["/nonexistent/run"]);
    let summary = dir.join("summary.csv");
    refused(
        &plot(&[d, "--fit", summary.to_str().unwrap()]),
        &["summary.csv", "JSON"],
    );
    refused(
        &plot(&["--projection", fit.to_str().unwrap()]),
        &["fit.json", "collbench.projection/v1"],
    );
}

#[test]
fn busbw_points_are_drawn_where_summary_csv_puts_them() {
    let (dir, _) = real_run();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("figs");
    let r = plot(&[
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--format",
        "svg",
    ]);
    assert_eq!(r.code(), 0, "{r:?}");
    let rows = common::summary(dir);
    for op in ["allreduce", "allgather"] {
        let svg = fs::read_to_string(out.join(format!("busbw-{op}.svg"))).unwrap();
        let (x, y) = common::svg::size_axes(&svg);
        let drawn = common::svg::circles(&svg);
        let of_op: Vec<_> = rows.iter().filter(|r| r.key.op.name() == op).collect();
        assert!(!of_op.is_empty());
        for row in of_op {
            let at = (
                x.pixel((row.key.bytes as f64).log2()),
                y.pixel(row.busbw_gbps),
            );
            // Coordinates are drawn rounded to whole pixels.
            let near = drawn
                .iter()
                .any(|c| (c.0 - at.0).abs() <= 1.5 && (c.1 - at.1).abs() <= 1.5);
            assert!(
                near,
                "{op} {:?}: busbw {} not drawn at {at:?}",
                row.key, row.busbw_gbps
            );
        }
    }
}
