//! Tests of the NCCL tuner export: ranges per op, the line limit, the chosen candidates.
use super::super::testfit::*;
use super::super::{export, ExportFormat, ExportOptions};
use super::MAX_LINE;
use crate::collective::{Algo, Op};
use crate::fit::forms::Form;

/// The config lines, split into their 10 fields.
fn rows(text: &str) -> Vec<Vec<String>> {
    for l in text.lines() {
        assert!(l.len() < MAX_LINE - 1, "line too long for the plugin: {l}");
        assert!(!l.starts_with(' ') && !l.is_empty(), "line: '{l}'");
    }
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>())
        .inspect(|f| assert_eq!(f.len(), 10, "{f:?}"))
        .collect()
}

fn field(r: &[String], i: usize) -> &str {
    r[i].as_str()
}

/// Ring and tree AllReduce measured on 8 ranks: tree (2 µs + 0.3 ns/B) beats ring (20 µs +
/// 0.17 ns/B) below (20 − 2) / (0.3 − 0.17) × 1000 = 138461.5 B.
fn ring_and_tree() -> crate::fit::schema::FitFile {
    let mut f = ring_fit();
    f.curves = vec![
        curve(
            Op::AllReduce,
            Algo::Ring,
            8,
            1,
            vec![line(8, 1 << 26, 20.0, 0.17)],
        ),
        curve(
            Op::AllReduce,
            Algo::Tree,
            8,
            1,
            vec![line(8, 4096, 2.0, 0.3), line(4097, 1 << 26, 2.0, 0.3)],
        ),
    ];
    f
}

#[test]
fn fastest_algorithm_switches_at_the_exact_crossover() {
    let text = export(
        &ring_and_tree(),
        ExportFormat::NcclTuner,
        &Default::default(),
    )
    .unwrap();
    let r = rows(&text);
    let ar: Vec<&Vec<String>> = r.iter().filter(|r| r[0] == "allreduce").collect();
    assert_eq!(ar.len(), 2, "{text}");
    assert_eq!(
        (field(ar[0], 1), field(ar[0], 2), field(ar[0], 3)),
        ("0", "138461", "tree")
    );
    assert_eq!(
        (field(ar[1], 1), field(ar[1], 2), field(ar[1], 3)),
        ("138462", "18446744073709551615", "ring")
    );
    for row in &r {
        // protocol, channels, nNodes, nRanks, numPipeOps, regBuff
        assert_eq!(&row[4..], ["simple", "-1", "1", "8", "-1", "-1"], "{row:?}");
    }
    // AllGather and ReduceScatter: ring models only, one row each over every size.
    for op in ["allgather", "reducescatter"] {
        let one: Vec<_> = r.iter().filter(|r| r[0] == op).collect();
        assert_eq!(one.len(), 1, "{text}");
        assert_eq!((field(one[0], 1), field(one[0], 3)), ("0", "ring"));
    }
    assert!(text.contains("only ring was fitted"), "{text}");
}

#[test]
fn models_decide_where_no_curve_was_measured() {
    // At 64 ranks: ring 2·63·7 µs + 2·63/64·S·0.2 ns/B vs tree 2·6·4 µs + S·0.5 ns/B.
    let mut f = ring_fit();
    f.models.push(model(
        Op::AllReduce,
        Algo::Tree,
        Form::Tree,
        &[4.0, 0.5],
        &[(2, 1), (4, 1), (8, 1)],
    ));
    let opts = ExportOptions {
        npus: Some(64),
        ..Default::default()
    };
    let text = export(&f, ExportFormat::NcclTuner, &opts).unwrap();
    let r = rows(&text);
    let ar: Vec<_> = r.iter().filter(|r| r[0] == "allreduce").collect();
    let ring = |s: f64| 2.0 * 63.0 * 7.0 + 2.0 * 63.0 / 64.0 * s / 1e3 * 0.2;
    let tree = |s: f64| 12.0 * 4.0 + s / 1e3 * 0.5;
    let cross: u64 = ar[0][2].parse::<u64>().unwrap() + 1;
    assert_eq!(
        (ar.len(), field(ar[0], 3), field(ar[1], 3)),
        (2, "tree", "ring")
    );
    assert!(tree(cross as f64 - 1.0) <= ring(cross as f64 - 1.0));
    assert!(ring(cross as f64) < tree(cross as f64));
    assert_eq!(&ar[0][6..8], ["1", "64"]);
}

#[test]
fn two_level_models_cover_multi_node_targets() {
    let r = rows(
        &export(
            &two_level_fit(),
            ExportFormat::NcclTuner,
            &Default::default(),
        )
        .unwrap(),
    );
    assert!(!r.is_empty());
    for row in &r {
        assert_eq!(
            (field(row, 3), field(row, 6), field(row, 7)),
            ("ring", "4", "32")
        );
    }
}

#[test]
fn a_fit_with_nothing_at_the_target_names_what_is_missing() {
    let opts = ExportOptions {
        npus: Some(16),
        nodes: Some(2),
        ..Default::default()
    };
    let e = export(&ring_fit(), ExportFormat::NcclTuner, &opts)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(
            "--export nccl-tuner: the fit has no ring or tree curve or model at 16 ranks \
             on 2 node(s)"
        ),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1);
    let empty = fit(vec![], vec![]);
    let e = export(&empty, ExportFormat::NcclTuner, &Default::default()).unwrap_err();
    assert!(
        e.to_string().contains("no ring or tree curve or model"),
        "{e}"
    );
}

/// Ring AllReduce on 8 ranks with LL (1 µs + 1 ns/B), Simple (10 µs + 0.1 ns/B) and NCCL's own
/// choice (auto, 3 µs + 0.5 ns/B): LL wins up to 9 / 0.9 × 1000 = 10000 B (a tie there goes to
/// the first candidate, ll), Simple above; auto is not a candidate once protocols were forced.
fn ring_by_protocol() -> crate::fit::schema::FitFile {
    use crate::collective::Proto;
    let mut f = ring_fit();
    let with = |proto, alpha, beta| {
        let mut c = curve(
            Op::AllReduce,
            Algo::Ring,
            8,
            1,
            vec![line(8, 1 << 26, alpha, beta)],
        );
        c.key.proto = Some(proto);
        c
    };
    f.curves = vec![
        with(Proto::Auto, 3.0, 0.5),
        with(Proto::Simple, 10.0, 0.1),
        with(Proto::Ll, 1.0, 1.0),
    ];
    f
}

#[test]
fn forced_protocols_are_candidates_and_the_winner_is_written() {
    let text = export(
        &ring_by_protocol(),
        ExportFormat::NcclTuner,
        &Default::default(),
    )
    .unwrap();
    let r = rows(&text);
    let ar: Vec<&Vec<String>> = r.iter().filter(|r| r[0] == "allreduce").collect();
    assert_eq!(ar.len(), 2, "{text}");
    let cols = |row: &Vec<String>| {
        (0..5)
            .map(|i| field(row, i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(cols(ar[0]), "allreduce,0,10000,ring,ll");
    assert_eq!(
        cols(ar[1]),
        "allreduce,10001,18446744073709551615,ring,simple"
    );
    assert!(text.contains("#   ring/ll: "), "{text}");
    assert!(!text.contains("ring/auto"), "{text}");
}
