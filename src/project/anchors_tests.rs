//! The anchors file's checks, near-valid files refused in one message, and series arithmetic.

use super::*;
use proptest::prelude::*;

const ONE: &str = r#"
[[anchor]]
id = "a"
source = "somewhere"
profile = "h100-ib400"
model = "llama2-7b"
world = 8
global_batch = 16
step_s = 1.5
"#;

#[test]
fn the_bundled_anchors_parse_and_every_model_resolves() {
    let list = load(None).unwrap();
    assert!(list.len() >= 8, "{}", list.len());
    for a in &list {
        model_of(&a.model).unwrap();
        assert!(specs::profile_hardware(&a.profile).is_some(), "{}", a.id);
    }
    let one = parse(ONE).unwrap();
    assert_eq!((one[0].tp, one[0].pp, one[0].recompute), (1, 1, false));
}

#[test]
fn near_valid_files_are_refused_naming_what_is_wrong() {
    let cases = [
        (
            ONE.replace("world = 8", "world = 0"),
            "world 0 is not between 1",
        ),
        (
            ONE.replace("world = 8", "world = 8\ntp = 3"),
            "not a multiple of tp 3",
        ),
        (ONE.replace("step_s = 1.5", "step_s = -1.5"), "step_s -1.5"),
        (ONE.replace("step_s = 1.5", "step_s = nan"), "step_s NaN"),
        (
            ONE.replace("id = \"a\"", "id = \"a,b\""),
            "id 'a,b' is not a name",
        ),
        (ONE.replace("world = 8", "worlds = 8"), "unknown field"),
        (format!("{ONE}{ONE}"), "anchor id a is given twice"),
        ("".to_string(), "missing field"),
    ];
    for (text, says) in cases {
        let e = parse(&text).unwrap_err();
        assert!(e.contains(says), "{says}: {e}");
    }
}

#[test]
fn a_series_compares_per_gpu_throughput_from_its_smallest_to_its_largest_world() {
    let run = |world: usize, published: f64, projected: f64| Projected {
        anchor: Anchor {
            world,
            global_batch: world,
            series: Some("s".into()),
            step_s: published,
            ..parse(ONE).unwrap().remove(0)
        },
        seq: 100,
        step_s: projected,
        fits_memory: true,
        memory_gb: 1.0,
    };
    // Weak scaling: per-GPU throughput falls 20% published (1 s to 1.25 s), 10% projected.
    let s = series(&[run(16, 1.25, 1.1), run(8, 1.0, 1.0), run(12, 1.1, 1.0)]);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].worlds, [8, 12, 16]);
    assert!((s[0].published_change + 0.2).abs() < 1e-12, "{s:?}");
    assert!((s[0].projected_change + 1.0 / 11.0).abs() < 1e-12, "{s:?}");
    // One run alone is no series.
    assert!(series(&[run(8, 1.0, 1.0)]).is_empty());
}

proptest! {
    #[test]
    fn any_edit_of_a_valid_file_parses_or_is_refused_without_panic(
        at in 0usize..200,
        cut in 0usize..20,
        insert in "[ -~\n]{0,12}",
    ) {
        let mut text = ONE.to_string();
        let at = at.min(text.len());
        let end = (at + cut).min(text.len());
        if text.is_char_boundary(at) && text.is_char_boundary(end) {
            text.replace_range(at..end, &insert);
        }
        if let Ok(list) = parse(&text) {
            prop_assert!(list.iter().all(|a| a.step_s > 0.0 && a.world > 0 && a.tp > 0));
        }
    }
}

#[test]
fn interleaving_needs_stages_and_a_series_is_no_anchors_id() {
    let e = parse(&ONE.replace("world = 8", "world = 8\nvp = 2")).unwrap_err();
    assert!(e.contains("vp 2 needs pipeline stages"), "{e}");
    let two = format!(
        "{ONE}{}",
        ONE.replace("id = \"a\"", "id = \"b\"\nseries = \"a\"")
    );
    assert!(parse(&two)
        .unwrap_err()
        .contains("series a is also an anchor's id"));
    let big = ONE.replace("global_batch = 16", "global_batch = 16777216");
    assert!(parse(&big).unwrap_err().contains("global_batch 16777216"));
}
