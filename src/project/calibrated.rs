//! The calibration `collbench project` uses (`--calibration`), fitted to the bundled published
//! runs on its GPU (bench-configs/anchors.toml), and the line it prints beside its table: how
//! far those runs land, held out a series at a time, with it and with the roofline
//! (docs/METHODOLOGY.md, "Calibration, judged on held-out runs").
//!
//! `auto` (the default) fits `compute_scale` to every run on the GPU and uses it only where,
//! held out, it lands closer to the published runs than the roofline does, both on average and
//! at its largest miss; `all` uses that fit regardless; a framework's name fits that
//! framework's runs only; `none` keeps the roofline as it is.

use super::anchors::{self, Anchor, Errors, Projected};
use super::anchors_fit::{self, Grouping, Params};
use super::calibration::Calibration;
use super::specs;
use crate::error::{Error, Result};

/// `--calibration`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CalibrationChoice {
    /// `All` where it beats the roofline on held-out runs, else `None`.
    Auto,
    /// Fitted to every bundled run on the GPU.
    All,
    /// Fitted to the runs of one framework on the GPU.
    Framework(String),
    /// The roofline as it is.
    None,
}

impl CalibrationChoice {
    /// `auto`, `all`, `none` or a framework's name (a plain name; which exist is known per GPU).
    pub fn parse(s: &str) -> Result<CalibrationChoice> {
        let word = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        match s.trim() {
            "auto" => Ok(CalibrationChoice::Auto),
            "all" => Ok(CalibrationChoice::All),
            "none" => Ok(CalibrationChoice::None),
            f if !f.is_empty() && f.len() <= 64 && f.chars().all(word) => {
                Ok(CalibrationChoice::Framework(f.to_string()))
            }
            _ => Err(Error::usage(format!(
                "--calibration '{s}': give auto, all, none or a framework's name (megatron-lm, \
                 megatron-deepspeed, pytorch-fsdp, ...: the `framework` of bench-configs/anchors.toml)"
            ))),
        }
    }
}

/// The calibration chosen, and what `project` says of it on stderr.
#[derive(Clone, Debug, PartialEq)]
pub struct Chosen {
    pub calibration: Calibration,
    pub said: String,
}

/// A calibration fitted to some runs, and how they land held out with it and with the roofline.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    pub calibration: Calibration,
    /// `None` where the runs are one series (no fold is left to fit on).
    pub held_out: Option<Errors>,
    pub roofline: Errors,
}

impl Judged {
    /// `compute_scale` fitted to `runs` (one GPU's, or one framework's on it: their folds are
    /// the series), and judged leaving one series out.
    pub fn of(runs: &[Anchor]) -> Result<Judged> {
        let refs: Vec<&Anchor> = runs.iter().collect();
        let calibration = anchors_fit::fit(&refs, Params::Scale)?;
        let held = anchors_fit::held_out(runs, Params::Scale, Grouping::Profile)?;
        let projected = (runs.iter())
            .map(|a| anchors::project_anchor(a, Calibration::IDENTITY))
            .collect::<Result<Vec<Projected>>>()?;
        Ok(Judged {
            calibration,
            held_out: (!held.iter().all(|h| h.calibration.is_identity()))
                .then(|| anchors_fit::errors(&held)),
            roofline: Errors::of(projected.iter().map(Projected::error)),
        })
    }

    /// Held out, closer than the roofline on average and at the largest miss.
    pub fn beats_roofline(&self) -> bool {
        self.held_out.is_some_and(|e| {
            e.mean_abs < self.roofline.mean_abs && e.largest_abs < self.roofline.largest_abs
        })
    }

    /// "held out ... against the roofline's ...".
    fn comparison(&self) -> String {
        let r = &self.roofline;
        let roofline = format!(
            "the roofline's mean |error| {:.1}%, largest {:.1}%, {} within 15%",
            100.0 * r.mean_abs,
            100.0 * r.largest_abs,
            r.within_goal
        );
        match self.held_out {
            None => format!("they are one series, so no held-out error ({roofline})"),
            Some(e) => format!(
                "held out a series at a time they land {:+.0}% to {:+.0}% from their step times \
                 (mean |error| {:.1}%, largest {:.1}%, {} of {} within 15%; {roofline})",
                100.0 * e.lowest,
                100.0 * e.highest,
                100.0 * e.mean_abs,
                100.0 * e.largest_abs,
                e.within_goal,
                e.count
            ),
        }
    }
}

/// The bundled runs on the GPU named `hardware`.
fn runs_on(hardware: &str) -> Result<Vec<Anchor>> {
    let on = |a: &Anchor| specs::profile_hardware(&a.profile).is_some_and(|h| h.name == hardware);
    Ok(anchors::load(None)?.into_iter().filter(on).collect())
}

/// The calibration of `choice` for `hardware`; the roofline where no run is on that GPU.
pub fn choose(hardware: &str, choice: &CalibrationChoice) -> Result<Chosen> {
    let on_gpu = runs_on(hardware)?;
    let mut frameworks: Vec<&str> = Vec::new();
    for f in on_gpu.iter().map(Anchor::framework) {
        if !frameworks.contains(&f) {
            frameworks.push(f);
        }
    }
    let frameworks = frameworks.join(", ");
    let roofline = |said: String| Chosen {
        calibration: Calibration::IDENTITY,
        said: format!("collbench: calibration: none, the roofline as it is; {said}"),
    };
    if on_gpu.is_empty() {
        let said = format!("no bundled published run is on {hardware} (see `collbench anchors`)");
        return Ok(roofline(said));
    }
    let runs: Vec<Anchor> = match choice {
        CalibrationChoice::Framework(f) => {
            on_gpu.into_iter().filter(|a| a.framework() == f).collect()
        }
        _ => on_gpu,
    };
    if let (CalibrationChoice::Framework(f), true) = (choice, runs.is_empty()) {
        return Err(Error::usage(format!(
            "--calibration {f}: no bundled published run on {hardware} names that framework; \
             give auto, all, none or one of: {frameworks}"
        )));
    }
    let judged = Judged::of(&runs)?;
    let of = match choice {
        CalibrationChoice::Framework(f) => format!("{} published {f} runs", runs.len()),
        _ => format!("{} published runs", runs.len()),
    };
    let fitted = format!(
        "kernels at {:.3} x their roofline time, fitted to the {of} on {hardware}",
        judged.calibration.compute_scale
    );
    let see = "see `collbench anchors --calibrate`";
    match choice {
        CalibrationChoice::None => Ok(roofline(format!(
            "with it the {of} on {hardware} land {:+.0}% to {:+.0}% from their step times (mean \
             |error| {:.1}%); {see}",
            100.0 * judged.roofline.lowest,
            100.0 * judged.roofline.highest,
            100.0 * judged.roofline.mean_abs
        ))),
        CalibrationChoice::Auto if !judged.beats_roofline() => Ok(roofline(format!(
            "{fitted}, does not beat it: {}; --calibration all uses it anyway, --calibration \
             FRAMEWORK fits one framework's runs ({frameworks}); {see}",
            judged.comparison()
        ))),
        _ => Ok(Chosen {
            calibration: judged.calibration,
            said: format!(
                "collbench: calibration: {fitted}; {}; --calibration none for the roofline; {see}",
                judged.comparison()
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_gpu_without_published_runs_keeps_the_roofline_and_says_so() {
        let c = choose("v100", &CalibrationChoice::Auto).unwrap();
        assert!(c.calibration.is_identity());
        assert!(
            c.said.contains("no bundled published run is on v100"),
            "{}",
            c.said
        );
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
}
