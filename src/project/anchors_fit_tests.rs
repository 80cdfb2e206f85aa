//! Fits that find the scale runs were made with, held-out folds, groupings and the edge rule.

use super::*;
use crate::project::anchors::parse;

/// Two FSDP runs on the H100 profile whose "published" steps are the projection's with
/// kernels 1.3 times the roofline.
fn runs() -> Vec<Anchor> {
    let text = r#"
[[anchor]]
id = "a"
series = "s"
source = "made here"
profile = "h100-ib400"
model = "llama2-7b"
world = 8
global_batch = 16
step_s = 1.0

[[anchor]]
id = "b"
source = "made here"
profile = "h100-ib400"
model = "llama2-13b"
world = 16
global_batch = 32
step_s = 1.0
"#;
    let truth = Calibration {
        compute_scale: 1.3,
        ..Calibration::IDENTITY
    };
    let mut list = parse(text).unwrap();
    for a in &mut list {
        a.step_s = project_anchor(a, truth).unwrap().step_s;
    }
    list
}

#[test]
fn a_fit_finds_the_scale_the_runs_were_made_with_and_held_out_runs_land_on_them() {
    let list = runs();
    let all: Vec<&Anchor> = list.iter().collect();
    let c = fit(&all, Params::Scale).unwrap();
    assert!((c.compute_scale - 1.3).abs() < 0.005, "{c:?}");
    assert_eq!(c.layer_gap_s, 0.0);
    // Each run fitted on the other alone: the same scale, so errors near zero.
    let held = held_out(&list, Params::Scale, Grouping::Profile).unwrap();
    assert!(errors(&held).mean_abs < 0.005, "{held:?}");
    assert!(held
        .iter()
        .all(|h| (h.calibration.compute_scale - 1.3).abs() < 0.005));
}

#[test]
fn a_framework_with_one_fold_on_its_profile_is_held_out_at_the_roofline() {
    let mut list = runs();
    list[0].framework = Some("eager".into());
    list[1].framework = Some("fused".into());
    let by_profile = held_out(&list, Params::Scale, Grouping::Profile).unwrap();
    assert!(by_profile.iter().all(|h| !h.calibration.is_identity()));
    let by_framework = held_out(&list, Params::Scale, Grouping::ProfileAndFramework).unwrap();
    assert!(by_framework.iter().all(|h| h.calibration.is_identity()));
    let groups = per_group(&list, Params::Scale, Grouping::ProfileAndFramework).unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g.framework.as_str()).collect();
    assert_eq!(names, ["eager", "fused"]);
    assert!(groups
        .iter()
        .all(|g| g.anchors == 1 && g.on_edge(Params::Scale).is_none()));
}

#[test]
fn a_fit_on_the_edge_of_a_range_is_flagged_for_the_parameters_it_moved() {
    let fitted = |compute_scale: f64, memory_scale: f64, layer_gap_s: f64| Fitted {
        profile: "p".into(),
        framework: String::new(),
        calibration: Calibration {
            compute_scale,
            memory_scale,
            layer_gap_s,
        },
        anchors: 2,
    };
    let edge = |f: Fitted, p: Params| f.on_edge(p);
    assert_eq!(edge(fitted(1.3, 1.0, 0.0), Params::Scale), None);
    assert_eq!(
        edge(fitted(0.5, 1.0, 0.0), Params::Scale),
        Some("compute_scale")
    );
    let memory = Params::ScaleAndMemory;
    assert_eq!(edge(fitted(1.3, 4.0, 0.0), memory), Some("memory_scale"));
    assert_eq!(edge(fitted(1.3, 2.0, 0.0), memory), None);
    // No gap is a value of its own; the 50 ms cap is the search's bound.
    assert_eq!(edge(fitted(1.3, 1.0, 0.0), Params::ScaleAndGap), None);
    assert_eq!(edge(fitted(1.3, 1.0, 0.002), Params::ScaleAndGap), None);
    let capped = edge(fitted(1.3, 1.0, 0.05), Params::ScaleAndGap);
    assert_eq!(capped, Some("layer_gap_s"));
}

#[test]
fn a_profile_with_one_fold_is_held_out_at_the_roofline() {
    let mut list = runs();
    list[1].profile = "a100-ib200".into();
    let held = held_out(&list, Params::ScaleAndGap, Grouping::Profile).unwrap();
    assert!(held.iter().all(|h| h.calibration.is_identity()), "{held:?}");
    let fitted = per_group(&list, Params::Scale, Grouping::Profile).unwrap();
    assert_eq!(fitted.len(), 2);
    let scale = fitted[0].calibration.compute_scale;
    assert!((scale - 1.3).abs() < 0.005, "{fitted:?}");
}

#[test]
fn golden_section_finds_the_minimum_of_a_unimodal_function_at_either_end_too() {
    let at = |m: f64| golden(|x| Ok((x - m) * (x - m)), -1.0, 2.0).unwrap();
    for m in [0.3, -1.0, 2.0, 1.9999] {
        assert!((at(m) - m).abs() < 1e-4, "{m}: {}", at(m));
    }
}
