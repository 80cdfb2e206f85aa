//! The calibration `project` chooses: the auto rule, the words of `--calibration`, where a
//! calibration may apply.

use super::*;
use proptest::prelude::*;

fn errors(mean_abs: f64, largest_abs: f64) -> Errors {
    Errors {
        mean_abs,
        largest_abs,
        ..Errors::of([0.1])
    }
}

#[test]
fn a_calibration_beats_the_roofline_only_closer_on_average_and_at_its_largest_miss() {
    let judged = |held: Option<Errors>| Judged {
        calibration: Calibration::IDENTITY,
        held_out: held,
        roofline: errors(0.2, 0.4),
    };
    assert!(judged(Some(errors(0.1, 0.3))).beats_roofline());
    assert!(!judged(Some(errors(0.25, 0.3))).beats_roofline());
    assert!(!judged(Some(errors(0.1, 0.5))).beats_roofline());
    assert!(!judged(None).beats_roofline());
}

#[test]
fn the_choice_reads_its_words_and_a_framework_name() {
    assert_eq!(
        CalibrationChoice::parse("auto").unwrap(),
        CalibrationChoice::Auto
    );
    assert_eq!(
        CalibrationChoice::parse(" none").unwrap(),
        CalibrationChoice::None
    );
    assert_eq!(
        CalibrationChoice::parse("megatron-lm").unwrap(),
        CalibrationChoice::Framework("megatron-lm".into())
    );
    for bad in ["", "a,b", "x y", &"f".repeat(65)] {
        let e = CalibrationChoice::parse(bad).unwrap_err().to_string();
        assert!(e.contains("give auto, all, none"), "{bad}: {e}");
    }
}

fn setting(hardware: &str) -> Setting<'_> {
    Setting {
        hardware,
        preset: true,
        measured_fit: false,
        kernels_set_by: None,
    }
}

#[test]
fn a_gpu_without_published_runs_keeps_the_roofline_unless_asked_for_more() {
    let c = choose(&setting("v100"), &CalibrationChoice::Auto).unwrap();
    assert!(c.calibration.is_identity());
    assert!(
        c.said.contains("no bundled published run is on v100"),
        "{}",
        c.said
    );
    let all = choose(&setting("v100"), &CalibrationChoice::All).unwrap_err();
    assert!(
        all.to_string().contains("--calibration all: no bundled"),
        "{all}"
    );
    let f = CalibrationChoice::Framework("megatron-lm".into());
    let e = choose(&setting("v100"), &f).unwrap_err().to_string();
    assert!(e.contains("no bundled published run is on v100"), "{e}");
}

#[test]
fn a_calibration_applies_only_where_the_runs_were_projected_as_this_projection_is() {
    let flat = Setting {
        kernels_set_by: Some("--compute-efficiency sets every kernel's rate"),
        ..setting("a100")
    };
    let file = Setting {
        preset: false,
        ..setting("a100")
    };
    let fit = Setting {
        measured_fit: true,
        ..setting("a100")
    };
    for s in [flat, file, fit] {
        let c = choose(&s, &CalibrationChoice::Auto).unwrap();
        assert!(c.calibration.is_identity(), "{s:?}: {}", c.said);
        assert!(choose(&s, &CalibrationChoice::None)
            .unwrap()
            .calibration
            .is_identity());
    }
    for s in [flat, file] {
        let e = choose(&s, &CalibrationChoice::All).unwrap_err().to_string();
        assert!(e.contains("leave --calibration out"), "{e}");
    }
    // A measured fit takes the bundled runs' fit when asked for it.
    let asked = choose(&fit, &CalibrationChoice::All).unwrap();
    assert!(!asked.calibration.is_identity(), "{}", asked.said);
    let auto = choose(&setting("a100"), &CalibrationChoice::Auto).unwrap();
    assert_eq!(auto.calibration, asked.calibration);
}

proptest! {
    /// Near-valid words: a letter changed, added or removed, or a separator inserted.
    #[test]
    fn any_text_is_a_choice_or_one_clear_error(
        word in prop::sample::select(vec!["auto", "all", "none", "megatron-lm"]),
        at in 0usize..12,
        with in prop::sample::select(vec!["", ",", " ", "=", "é", "x", "\n"]),
    ) {
        let mut s = word.to_string();
        let at = at.min(s.len());
        s.insert_str(at, with);
        match CalibrationChoice::parse(&s) {
            Ok(CalibrationChoice::Framework(f)) => prop_assert_eq!(f, s.trim()),
            Ok(_) => prop_assert!(["auto", "all", "none"].contains(&s.trim())),
            Err(e) => {
                let quoted = format!("'{}'", s);
                prop_assert!(e.to_string().contains(&quoted), "{}", e);
            }
        }
    }
}
