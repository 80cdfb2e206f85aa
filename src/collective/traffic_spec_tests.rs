use proptest::prelude::*;

use super::*;

fn spec(s: &str) -> TrafficSpec {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn every_form_parses_and_labels_itself() {
    assert_eq!(spec("uniform"), TrafficSpec::Spread(0.0));
    assert_eq!(spec("spread"), TrafficSpec::Spread(1.0));
    assert_eq!(spec("spread=0.25").label(), "spread 0.25");
    assert_eq!(spec("uniform").label(), "uniform");
    let m = spec("matrix=/tmp/t.txt,scale=2");
    assert_eq!(
        m,
        TrafficSpec::Matrix {
            path: "/tmp/t.txt".into(),
            scale: 2.0
        }
    );
    assert_eq!(m.label(), "matrix t.txt x2");
    assert_eq!(spec("matrix=t.txt").label(), "matrix t.txt");
    assert_eq!(spec("fractions=dir/f.csv").label(), "fractions f.csv");
    let TrafficSpec::Moe(r) = spec("moe=4096:8:2:1.2:7") else {
        panic!("moe")
    };
    assert_eq!(
        (r.tokens, r.experts, r.top_k, r.zipf, r.seed),
        (4096, 8, 2, 1.2, 7)
    );
    assert_eq!(
        spec("moe=16:1:1:0").label(),
        "moe tokens 16 experts 1 top_k 1 zipf 0 seed 0"
    );
}

#[test]
fn near_valid_specs_are_one_line_naming_the_part() {
    for (s, says) in [
        ("", "not a form"),
        ("spread=1.5", "spread 1.5"),
        ("spread=x", "S is not a number"),
        ("uniform=1", "not a form"),
        ("matrix=", "no matrix file"),
        ("matrix=t.txt,scale=0", "scale 0"),
        ("matrix=t.txt,scale=-1", "scale -1"),
        ("matrix=t.txt,scale=nan", "scale NaN"),
        ("fractions=", "not a form"),
        ("moe=1:2:3", "4 or 5 values, not 3"),
        ("moe=1:2:3:4:5:6", "not 6"),
        ("moe=x:2:1:1", "tokens \"x\""),
        ("moe=16:2:1:-1", "zipf -1"),
        ("moe=16:2:5:1", "top_k 5"),
        ("moe=16:2:1:1:-3", "seed \"-3\""),
        ("alltoall", "not a form"),
    ] {
        let e = s.parse::<TrafficSpec>().unwrap_err();
        assert!(e.contains(says), "{s:?}: {e}");
        assert!(e.contains("give one of uniform"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn building_reads_files_through_the_caller_and_checks_the_ranks() {
    let read = |p: &Path| match p.to_str() {
        Some("t.txt") => Ok("100 200\n300 400\n".to_string()),
        Some("f.csv") => Ok("0.5,0.5\n1,0\n".to_string()),
        _ => Err(format!("{}: no such file", p.display())),
    };
    let t = spec("matrix=t.txt,scale=2")
        .read(&read)
        .and_then(|s| s.at(2))
        .unwrap();
    assert_eq!(t.peer_bytes(1, 1, 2, 0), 800);
    assert!(spec("matrix=t.txt")
        .read(&read)
        .and_then(|s| s.at(3))
        .unwrap_err()
        .contains("fewer than the 3"));
    assert!(spec("fractions=f.csv")
        .read(&read)
        .and_then(|s| s.at(2))
        .is_ok());
    assert!(spec("fractions=nope.csv")
        .read(&read)
        .and_then(|s| s.at(2))
        .unwrap_err()
        .contains("nope.csv"));
    let bad = |p: &Path| -> Result<String, String> {
        let _ = p;
        Ok("1 2\n3\n".to_string())
    };
    let e = spec("matrix=odd.txt")
        .read(&bad)
        .and_then(|s| s.at(2))
        .unwrap_err();
    assert!(e.starts_with("odd.txt: row 2 has 1 values"), "{e}");
    let moe = spec("moe=64:2:2:1:3")
        .read(&read)
        .and_then(|s| s.at(4))
        .unwrap();
    assert!(moe.check_ranks(4).is_ok() && moe.sweeps());
}

proptest! {
    /// Any text is a spec or one line, never a panic.
    #[test]
    fn any_text_parses_or_is_refused_in_one_line(s in "\\PC{0,40}") {
        if let Err(e) = s.parse::<TrafficSpec>() {
            prop_assert!(!e.is_empty());
        }
    }

    /// Near-valid moe specs: one value changed to any text.
    #[test]
    fn near_valid_moe_specs_never_panic(at in 0usize..5, v in "[-0-9a-z.:]{0,8}") {
        let mut parts = ["64", "4", "2", "1.1", "9"];
        parts[at] = &v;
        let s = format!("moe={}", parts.join(":"));
        let _ = s.parse::<TrafficSpec>();
    }
}

#[test]
fn a_routing_label_reads_back_as_its_router_and_no_other_label_does() {
    let spec: TrafficSpec = "moe=4096:8:2:1.2:7".parse().unwrap();
    let label = spec.label();
    assert_eq!(
        TrafficSpec::routing_of_label(&label),
        Some(Routing {
            tokens: 4096,
            experts: 8,
            top_k: 2,
            zipf: 1.2,
            seed: 7
        })
    );
    for other in [
        "uniform",
        "spread 1",
        "matrix t.txt",
        "moe tokens 4096 experts 8 top_k 2 zipf 1.2",
        "moe tokens x experts 8 top_k 2 zipf 1.2 seed 7",
        "moe tokens 0 experts 8 top_k 2 zipf 1.2 seed 7",
        "moe experts 4096 tokens 8 top_k 2 zipf 1.2 seed 7",
    ] {
        assert_eq!(TrafficSpec::routing_of_label(other), None, "{other}");
    }
}

#[test]
fn a_file_pattern_is_labelled_by_its_name_and_its_cells() {
    let read_as = |text: &'static str| move |_: &Path| Ok::<String, String>(text.to_string());
    let m = spec("matrix=t.txt");
    let a = m.read(&read_as("16 32\n48 64\n")).unwrap().label;
    let same = m
        .read(&read_as("# the same cells\n16   32\n48 64\n"))
        .unwrap()
        .label;
    let other = m.read(&read_as("16 32\n48 80\n")).unwrap().label;
    assert!(
        a.starts_with("matrix t.txt #") && a.len() == "matrix t.txt #".len() + 8,
        "{a}"
    );
    assert_eq!(a, same);
    assert_ne!(a, other);
    let f = spec("fractions=f.csv")
        .read(&read_as("0.5,0.5\n1,0\n"))
        .unwrap();
    assert!(f.label.starts_with("fractions f.csv #"), "{}", f.label);
    let moe = spec("moe=64:2:2:1").read(&read_as("")).unwrap();
    assert_eq!(moe.label, spec("moe=64:2:2:1").label());
}
