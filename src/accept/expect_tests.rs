use super::*;
use crate::collective::{Algo, DType, Op};

fn key(op: Op, algo: Algo, nodes: usize, bytes: usize) -> GroupKey {
    GroupKey {
        op,
        algo,
        proto: None,
        dtype: DType::BF16,
        world: 8 * nodes,
        nodes,
        bytes,
        in_place: false,
        root: None,
        comm: Default::default(),
    }
}

/// Keys of one curve of `op` from 1 MiB to `largest`, at `nodes` nodes.
fn curve(op: Op, nodes: usize, largest: usize) -> Vec<GroupKey> {
    let mut b = 1 << 20;
    let mut keys = Vec::new();
    while b <= largest {
        keys.push(key(op, Algo::Auto, nodes, b));
        b *= 2;
    }
    keys
}

fn min_busbw(c: &Criterion) -> f64 {
    match c.checks[..] {
        [Check::MinBusbw(v)] => v,
        _ => panic!("{:?}", c.checks),
    }
}

#[test]
fn every_bundled_profile_parses_and_cites_its_numbers() {
    for (name, text) in BUNDLED {
        let p = Profile::parse(text, Path::new(name)).unwrap();
        assert_eq!(p.name, name);
        assert!(!p.rows.is_empty(), "{name}");
        for r in &p.rows {
            assert!(r.source.contains('#'), "{name}: {}", r.source);
            assert!(r.busbw_gbps > 1.0 && r.from_bytes >= 1 << 30, "{name}");
        }
        assert!(Profile::load(name).is_ok());
    }
}

#[test]
fn a_node_profile_judges_one_node_past_its_saturation_size() {
    let e = Expect::load(&["h100-nvswitch".into()], 0.1, None).unwrap();
    let mut keys = curve(Op::AllReduce, 1, 16 << 30);
    keys.extend(curve(Op::AllGather, 1, 16 << 30));
    let (criteria, notes) = e.criteria(&keys);
    // Correctness, AllReduce auto/nvls, AllGather+ReduceScatter; the ring row has no points.
    assert_eq!(criteria.len(), 3, "{criteria:?}");
    assert_eq!(criteria[0].checks, vec![Check::MaxWrong(0)]);
    let ar = &criteria[1];
    assert!((min_busbw(ar) - 432.0).abs() < 1e-9, "{ar:?}");
    assert_eq!((ar.select.min_bytes, ar.select.nodes), (8 << 30, Some(1)));
    assert!((min_busbw(&criteria[2]) - 333.0).abs() < 1e-9);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("none of its ops"), "{notes:?}");
}

#[test]
fn a_run_below_the_saturation_size_is_connectivity_only_and_says_so() {
    let e = Expect::load(&["h100-nvswitch".into()], 0.1, None).unwrap();
    let keys = curve(Op::AllReduce, 1, 1 << 30);
    let (criteria, notes) = e.criteria(&keys);
    assert_eq!(criteria.len(), 1, "only correctness: {criteria:?}");
    let n = notes
        .iter()
        .find(|n| n.contains("connectivity only"))
        .unwrap();
    assert!(n.contains("measured up to 1 GiB, below 8 GiB"), "{n}");
    assert!(n.contains("480 GB/s"), "{n}");
}

#[test]
fn a_nic_profile_scales_by_the_nics_and_judges_each_node_count() {
    let err = Expect::load(&["ib-ndr-400".into()], 0.1, None).unwrap_err();
    assert!(err.to_string().contains("--nics"), "{err}");
    let e = Expect::load(&["ib-ndr-400".into()], 0.05, Some(8)).unwrap();
    let mut keys = curve(Op::AllReduce, 2, 8 << 30);
    keys.extend(curve(Op::AllReduce, 4, 8 << 30));
    keys.extend(curve(Op::AllReduce, 1, 8 << 30));
    let (criteria, _) = e.criteria(&keys);
    let nodes: Vec<Option<usize>> = criteria[1..].iter().map(|c| c.select.nodes).collect();
    assert_eq!(nodes, vec![Some(2), Some(4)]);
    assert!((min_busbw(&criteria[1]) - 46.0 * 8.0 * 0.95).abs() < 1e-9);
    // One node only: the network is not judged, and the note says why.
    let (criteria, notes) = e.criteria(&curve(Op::AllReduce, 1, 8 << 30));
    assert_eq!(criteria.len(), 1);
    assert!(notes[0].contains("across nodes"), "{notes:?}");
}

#[test]
fn near_valid_profiles_are_refused_in_one_line_naming_the_row() {
    let good = "name = \"x\"\nper = \"node\"\n[[expect]]\nop = \"allreduce\"\n\
                busbw_gbps = 100.0\nfrom_bytes = \"1G\"\nsource = \"s#1\"\n";
    assert!(Profile::parse(good, Path::new("x.toml")).is_ok());
    let cases = [
        (good.replace("100.0", "0.0"), "busbw_gbps 0"),
        (good.replace("100.0", "-5.0"), "busbw_gbps -5"),
        (good.replace("100.0", "1e9"), "busbw_gbps"),
        (good.replace("\"1G\"", "\"1Q\""), "from_bytes"),
        (good.replace("\"1G\"", "0"), "from_bytes 0"),
        (good.replace("\"s#1\"", "\" \""), "source is empty"),
        (good.replace("allreduce", "allreduce,nope"), "op"),
        (
            good.replace("\"node\"", "\"rack\""),
            "line 2: unknown variant `rack`",
        ),
        (good.replace("per =", "pre ="), "pre"),
        (good.replace("[[expect]]", "[[expected]]"), "expected"),
        (
            "name = \"x\"\nper = \"nic\"\nexpect = []\n".to_string(),
            "no [[expect]]",
        ),
    ];
    for (text, want) in cases {
        let e = Profile::parse(&text, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.toml") && e.contains(want), "{want}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    let e = Profile::load("no-such-profile").unwrap_err().to_string();
    assert!(
        e.contains("h100-nvswitch") && e.contains("ib-ndr-400"),
        "{e}"
    );
}
