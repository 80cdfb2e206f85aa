use super::*;
use crate::collective::{Algo, DType, Op, Proto};

fn parse(text: &str) -> Result<Criteria> {
    Criteria::parse(text, Path::new("/nowhere/crit.toml"))
}

/// The one-line message of a refused file.
fn refused(text: &str) -> String {
    let err = parse(text).expect_err("should be refused");
    assert!(matches!(err, Error::Input { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("/nowhere/crit.toml: "), "{msg}");
    assert!(!msg.contains('\n'), "not one line: {msg}");
    msg
}

const GOOD: &str = r#"
name = "node-a"
description = "two ranks"

[sweep]
op = "allreduce"
ranks = 2

[[criterion]]
name = "bw"
op = "allreduce,allgather"
world = [2, 4]
min_bytes = "1M"
max_bytes = 67108864
min_busbw_gbps = 5
max_cv = 0.1
max_wrong = 0
stat = "worst"

[[criterion]]
max_time_us = 50.0
"#;

#[test]
fn a_full_file_parses_with_documented_defaults() {
    let c = parse(GOOD).unwrap();
    assert_eq!(c.name, "node-a");
    assert!(c.sweep.is_some());
    assert_eq!(c.criteria.len(), 2);
    let bw = &c.criteria[0];
    assert_eq!(bw.select.ops, vec![Op::AllReduce, Op::AllGather]);
    assert_eq!(bw.select.worlds, vec![2, 4]);
    assert_eq!(
        (bw.select.min_bytes, bw.select.max_bytes),
        (1 << 20, 64 << 20)
    );
    assert_eq!(bw.stat, Stat::Worst);
    assert_eq!(
        bw.checks,
        vec![Check::MinBusbw(5.0), Check::MaxCv(0.1), Check::MaxWrong(0)]
    );
    let lat = &c.criteria[1];
    assert_eq!(lat.name, "criterion-2");
    assert_eq!(lat.stat, Stat::Median);
    assert_eq!(
        (lat.select.min_bytes, lat.select.max_bytes),
        (0, usize::MAX)
    );
    assert!(lat.select.ops.is_empty() && lat.select.in_place.is_none());
    assert_eq!(lat.select.describe(), "any size");
    assert_eq!(
        bw.select.describe(),
        "op allreduce/allgather, world 2/4, sizes 1 MiB..64 MiB"
    );
}

#[test]
fn a_proto_selector_parses_and_is_described() {
    let c = parse("[[criterion]]\nproto = \"ll128, simple\"\nmax_cv = 0.5\n").unwrap();
    let sel = &c.criteria[0].select;
    assert_eq!(sel.protos, vec![Proto::Ll128, Proto::Simple]);
    assert_eq!(sel.describe(), "proto ll128/simple, any size");
    let hit = |proto| {
        sel.matches(
            Op::AllReduce,
            Algo::Ring,
            proto,
            DType::F32,
            2,
            None,
            8,
            false,
        )
    };
    assert!(hit(Some(Proto::Simple)) && !hit(Some(Proto::Ll)) && !hit(None));
    let any = parse("[[criterion]]\nmax_cv = 0.5\n").unwrap();
    assert!(any.criteria[0].select.protos.is_empty());
}

#[test]
fn the_file_name_is_the_default_name() {
    let c = parse("[[criterion]]\nmax_cv = 0.5").unwrap();
    assert_eq!(c.name, "crit");
    assert!(c.sweep.is_none());
}

#[test]
fn unknown_keys_are_named_with_their_line() {
    let msg = refused("[[criterion]]\nmax_cv = 0.5\nmin_busbw = 3\n");
    assert!(msg.contains("line 3") && msg.contains("min_busbw"), "{msg}");
    let msg = refused("nmae = \"x\"\n[[criterion]]\nmax_cv = 0.5\n");
    assert!(msg.contains("line 1") && msg.contains("nmae"), "{msg}");
    let msg = refused("[sweep]\nopp = \"allreduce\"\n[[criterion]]\nmax_cv = 0.5\n");
    assert!(msg.contains("line 2") && msg.contains("opp"), "{msg}");
}

#[test]
fn impossible_thresholds_are_refused_naming_criterion_and_key() {
    let one = |body: &str| refused(&format!("[[criterion]]\nname = \"c1\"\n{body}\n"));
    let cases = [
        ("min_busbw_gbps = -1.0", "min_busbw_gbps = -1"),
        ("min_busbw_gbps = 0", "min_busbw_gbps = 0"),
        ("max_time_us = 0", "max_time_us = 0"),
        ("max_cv = -0.1", "max_cv = -0.1"),
        ("max_cv = nan", "max_cv = NaN"),
        ("max_rank_skew = -1", "max_rank_skew = -1"),
        ("max_node_skew = inf", "max_node_skew = inf"),
        ("max_wrong = -1", "max_wrong = -1"),
        (
            "max_cv = 0.1\nmin_bytes = \"1M\"\nmax_bytes = \"1K\"",
            "min_bytes 1 MiB is larger",
        ),
        ("max_cv = 0.1\nmin_bytes = -5", "min_bytes -5 is negative"),
        ("max_cv = 0.1\nmax_bytes = \"12Q\"", "max_bytes: size '12Q'"),
        ("max_cv = 0.1\nstat = \"medain\"", "stat 'medain'"),
        (
            "max_cv = 0.1\nop = \"allgatherr\"",
            "op: unknown op 'allgatherr'",
        ),
        (
            "max_cv = 0.1\nproto = \"ll64\"",
            "proto: unknown protocol 'll64'; valid values: ll, ll128, simple, auto",
        ),
        ("max_cv = 0.1\nproto = \"\"", "proto is empty"),
        ("max_cv = 0.1\nworld = 0", "world 0"),
        ("max_cv = 0.1\nworld = []", "world = []"),
        (
            "max_cv = 0.1\nworld = [2, 9223372036854775807]",
            "world = 9223372036854775807 is outside 1..=1048576",
        ),
        ("max_cv = 0.1\nnodes = 0", "nodes 0"),
        ("op = \"allreduce\"", "states no threshold"),
        ("max_fit_deviation = 0.1", "need reference_fit"),
        (
            "max_cv = 0.1\nreference_fit = \"fit.json\"",
            "no max_fit_deviation",
        ),
        (
            "max_fit_slowdown = 0.1\nreference_fit = \"missing.json\"",
            "reference_fit: ",
        ),
    ];
    for (body, want) in cases {
        let msg = one(body);
        assert!(msg.contains(want), "{body:?}: '{want}' missing from {msg}");
        assert!(msg.contains("criterion 'c1'"), "{msg}");
    }
}

#[test]
fn structural_mistakes_are_refused() {
    assert!(refused("name = \"x\"").contains("no [[criterion]]"));
    let empty = refused("[[criterion]]\nname = \" \"\nmax_cv = 1\n");
    assert!(empty.contains("name is empty"), "{empty}");
    let twice =
        "[[criterion]]\nname = \"a\"\nmax_cv = 1\n[[criterion]]\nname = \"a\"\nmax_cv = 2\n";
    assert!(refused(twice).contains("'a' is named twice"));
    let unnamed = refused("[[criterion]]\nmax_cv = 1\n[[criterion]]\nmax_cv = -1\n");
    assert!(unnamed.contains("criterion #2"), "{unnamed}");
    let sweep = refused("[sweep]\nranks = 2.5\n[[criterion]]\nmax_cv = 1\n");
    assert!(sweep.contains("[sweep]: ranks = 2.5"), "{sweep}");
    let syntax = refused("[[criterion]\nmax_cv = 1\n");
    assert!(syntax.contains("line 1"), "{syntax}");
}

#[test]
fn margins_and_bounds() {
    let bw = Check::MinBusbw(10.0);
    assert!(bw.passes(10.0) && !bw.passes(9.99));
    assert_eq!(bw.margin_pct(12.0), Some(20.0));
    assert_eq!(bw.margin_pct(8.0), Some(-20.0));
    let t = Check::MaxTime(50.0);
    assert!(t.passes(50.0) && !t.passes(50.1));
    assert_eq!(t.margin_pct(40.0), Some(20.0));
    assert_eq!(t.margin_pct(60.0), Some(-20.0));
    assert_eq!(Check::MaxWrong(0).margin_pct(0.0), None);
    assert!(Check::MaxWrong(0).passes(0.0) && !Check::MaxWrong(0).passes(1.0));
}

#[test]
fn the_committed_examples_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-configs/acceptance");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let c = Criteria::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                c.sweep.is_some() && !c.criteria.is_empty(),
                "{}",
                path.display()
            );
            seen += 1;
        }
    }
    assert!(
        seen >= 3,
        "expected the host, nccl and mpi examples in {}",
        dir.display()
    );
}

#[test]
fn the_number_of_criteria_is_bounded() {
    let one = |i: usize| format!("[[criterion]]\nname = \"c{i}\"\nmax_time_us = 50.0\n");
    let at_cap: String = (0..MAX_CRITERIA).map(one).collect();
    assert_eq!(parse(&at_cap).unwrap().criteria.len(), MAX_CRITERIA);
    let over: String = (0..=MAX_CRITERIA).map(one).collect();
    let msg = refused(&over);
    assert!(
        msg.contains("1001 [[criterion]] tables; at most 1000"),
        "{msg}"
    );
}
