//! `collbench sweep --metrics FILE`: every point as Prometheus gauges, the file replaced whole
//! after each point; a bad path is refused before anything runs.

mod common;

use std::collections::BTreeSet;
use std::fs;

use common::{run, summary, sweep_ok, tempdir};

#[test]
fn every_point_is_a_sample_of_every_metric_in_the_text_format() {
    let (tmp, out) = tempdir();
    let metrics = tmp.path().join("collbench.prom");
    let m = metrics.to_str().unwrap();
    #[rustfmt::skip]
    let args = [
        "--op", "allreduce,broadcast", "--ranks", "2", "-b", "1K", "-e", "8K", "-f", "8",
        "--iters", "3", "--warmup", "1", "--metrics", m,
    ];
    sweep_ok(&args, &out, common::hang_limit(common::RUN_TIMEOUT));
    let points = summary(&out);
    let text = fs::read_to_string(&metrics).unwrap();
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    // Five families, each with a sample per point (every host point has a loop time).
    assert_eq!(samples.len(), 5 * points.len(), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("# TYPE")).count(), 5);
    let mut label_sets = BTreeSet::new();
    for line in &samples {
        let (name_labels, value) = line.rsplit_once(' ').unwrap();
        let (name, labels) = name_labels.split_once('{').unwrap();
        assert!(name.starts_with("collbench_"), "{line}");
        assert!(
            labels.ends_with('}') && labels.contains("collective=\""),
            "{line}"
        );
        assert!(value.parse::<f64>().is_ok(), "{line}");
        assert!(
            label_sets.insert(name_labels.to_string()),
            "a label set twice: {line}"
        );
    }
    // The busbw of the first point, as summary.csv has it.
    let first = samples[0];
    assert!(
        first.contains("collective=\"AllReduce\",message_size=\"1024\""),
        "{first}"
    );
    let value: f64 = first.rsplit_once(' ').unwrap().1.parse().unwrap();
    assert_eq!(value, points[0].busbw_gbps);
    // The broadcast points carry their root.
    assert!(samples
        .iter()
        .any(|l| l.contains("collective=\"Broadcast\"") && l.contains("root=\"0\"")));
}

#[test]
fn a_metrics_path_without_its_folder_is_refused() {
    let (tmp, out) = tempdir();
    let bad = tmp.path().join("missing").join("m.prom");
    let r = run(
        &[
            "sweep",
            "--metrics",
            bad.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        common::hang_limit(common::RUN_TIMEOUT),
    );
    assert_eq!(r.code(), 2, "{r:?}");
    assert_eq!(r.stderr.lines().count(), 1, "{r:?}");
    assert!(r.stderr.contains("its folder does not exist"), "{r:?}");
    assert!(!out.exists());
}
