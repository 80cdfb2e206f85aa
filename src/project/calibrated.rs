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
use super::hardware::{presets, HardwareSpec};
use super::specs;
use super::step::StepOptions;
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
        match s.trim() {
            "auto" => Ok(CalibrationChoice::Auto),
            "all" => Ok(CalibrationChoice::All),
            "none" => Ok(CalibrationChoice::None),
            f if f.len() <= 64 && anchors::is_name(f) => {
                Ok(CalibrationChoice::Framework(f.to_string()))
            }
            _ => Err(Error::usage(format!(
                "--calibration '{s}': give auto, all, none or a framework's name (megatron-lm, \
                 megatron-deepspeed, pytorch-fsdp, ...: the `framework` of bench-configs/anchors.toml)"
            ))),
        }
    }
}

impl CalibrationChoice {
    /// The word `--calibration` was given.
    pub fn word(&self) -> &str {
        match self {
            CalibrationChoice::Auto => "auto",
            CalibrationChoice::All => "all",
            CalibrationChoice::Framework(f) => f,
            CalibrationChoice::None => "none",
        }
    }
}

/// What about a projection decides whether a calibration may apply to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting<'a> {
    /// The hardware's name, and whether it is a bundled GPU preset: a hardware file's numbers
    /// are its own, not those the published runs were projected with.
    pub hardware: &'a str,
    pub preset: bool,
    /// The network is a measured fit (`--fit`), not a bundled profile the runs were judged on.
    pub measured_fit: bool,
    /// Why every kernel's time is set otherwise, where it is (the flat rule, a replay).
    pub kernels_set_by: Option<&'a str>,
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
        let held_out = match anchors_fit::folds(runs) > 1 {
            true => Some(anchors_fit::errors(&anchors_fit::held_out(
                runs,
                Params::Scale,
                Grouping::Given,
            )?)),
            false => None,
        };
        let projected = (runs.iter())
            .map(|a| anchors::project_anchor(a, Calibration::IDENTITY))
            .collect::<Result<Vec<Projected>>>()?;
        Ok(Judged {
            calibration,
            held_out,
            roofline: Errors::of(projected.iter().map(Projected::error)),
        })
    }

    /// Held out, closer than the roofline on average and at the largest miss.
    pub fn beats_roofline(&self) -> bool {
        self.held_out.is_some_and(|e| e.beats(&self.roofline))
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

/// The frameworks of `runs`, each once, in order.
fn frameworks(runs: &[Anchor]) -> String {
    anchors::first_seen(runs.iter().map(Anchor::framework)).join(", ")
}

/// The roofline, and why.
fn roofline(why: String) -> Chosen {
    Chosen {
        calibration: Calibration::IDENTITY,
        said: format!("collbench: calibration: none, the roofline as it is; {why}"),
    }
}

/// The calibration of `choice` in `setting`. `auto` and `none` keep the roofline wherever a
/// calibration may not apply and say why; `all` or a framework there is a usage error, as is a
/// framework no bundled run on the GPU names.
pub fn choose(setting: &Setting, choice: &CalibrationChoice) -> Result<Chosen> {
    let explicit = matches!(
        choice,
        CalibrationChoice::All | CalibrationChoice::Framework(_)
    );
    let hardware = setting.hardware;
    let blocked = setting.kernels_set_by.map(str::to_string).or_else(|| {
        (!setting.preset).then(|| {
            "--hardware gives a file whose numbers are not a bundled GPU preset's (those the \
             published runs were projected with)"
                .to_string()
        })
    });
    if let Some(why) = blocked {
        if explicit {
            return Err(Error::usage(format!(
                "--calibration {}: {why}; leave --calibration out",
                choice.word()
            )));
        }
        return Ok(roofline(why));
    }
    let on_gpu = runs_on(hardware)?;
    let runs =
        match choice {
            CalibrationChoice::None => return Ok(roofline(roofline_line(hardware, &on_gpu))),
            CalibrationChoice::Auto if setting.measured_fit => return Ok(roofline(
                "the network is a measured fit (--fit), not a bundled profile the published runs \
                 were judged with; --calibration all or a framework's name applies their fit \
                 anyway"
                    .to_string(),
            )),
            CalibrationChoice::Framework(f) => of_framework(hardware, f, on_gpu)?,
            _ => on_gpu,
        };
    if runs.is_empty() {
        let why = format!("no bundled published run is on {hardware} (see `collbench anchors`)");
        return match explicit {
            true => Err(Error::usage(format!(
                "--calibration {}: {why}",
                choice.word()
            ))),
            false => Ok(roofline(why)),
        };
    }
    let judged = match (Judged::of(&runs), choice) {
        (Ok(j), _) => j,
        (Err(e), CalibrationChoice::Auto) => {
            return Ok(roofline(format!(
                "the fit to the published runs failed: {e}"
            )))
        }
        (Err(e), _) => return Err(e),
    };
    Ok(chosen(hardware, choice, &runs, &judged))
}

/// The runs on the GPU of framework `f`; a usage error where none is, naming those there are.
fn of_framework(hardware: &str, f: &str, on_gpu: Vec<Anchor>) -> Result<Vec<Anchor>> {
    let there = frameworks(&on_gpu);
    let runs: Vec<Anchor> = on_gpu.into_iter().filter(|a| a.framework() == f).collect();
    if runs.is_empty() {
        let known = match there.is_empty() {
            true => format!("no bundled published run is on {hardware}"),
            false => format!("those on {hardware}: {there}"),
        };
        return Err(Error::usage(format!(
            "--calibration {f}: no bundled published run on {hardware} names that framework \
             ({known}); give auto, all, none or one of them"
        )));
    }
    Ok(runs)
}

/// What `choice` gives with the fit `judged` of `runs`.
fn chosen(hardware: &str, choice: &CalibrationChoice, runs: &[Anchor], judged: &Judged) -> Chosen {
    let of = match choice {
        CalibrationChoice::Framework(f) => format!("{} published {f} runs", runs.len()),
        _ => format!("{} published runs", runs.len()),
    };
    let fitted = format!(
        "kernels at {:.3} x their roofline time, fitted to the {of} on {hardware}",
        judged.calibration.compute_scale
    );
    let see = "see `collbench anchors --calibrate`";
    if *choice == CalibrationChoice::Auto && !judged.beats_roofline() {
        return roofline(format!(
            "{fitted}, does not beat it: {}; --calibration all uses it anyway, --calibration \
             FRAMEWORK fits one framework's runs ({}); {see}",
            judged.comparison(),
            frameworks(runs)
        ));
    }
    Chosen {
        calibration: judged.calibration,
        said: format!(
            "collbench: calibration: {fitted}; {}; --calibration none for the roofline; {see}",
            judged.comparison()
        ),
    }
}

/// How far the roofline lands from the runs on the GPU (those it can project).
fn roofline_line(hardware: &str, runs: &[Anchor]) -> String {
    let errors = (runs.iter())
        .filter_map(|a| anchors::project_anchor(a, Calibration::IDENTITY).ok())
        .map(|p| p.error());
    let e = Errors::of(errors);
    if e.count == 0 {
        return format!("no bundled published run is on {hardware} (see `collbench anchors`)");
    }
    format!(
        "with it the {} published runs on {hardware} land {:+.0}% to {:+.0}% from their step \
         times (mean |error| {:.1}%); see `collbench anchors --calibrate`",
        e.count,
        100.0 * e.lowest,
        100.0 * e.highest,
        100.0 * e.mean_abs
    )
}

/// `opts` with the calibration `choice` gives a projection on `hardware` (with a measured
/// `--fit`, under `--replay`), and what to say of it.
pub fn apply(
    opts: StepOptions,
    hardware: &HardwareSpec,
    measured_fit: bool,
    replay: bool,
    choice: &CalibrationChoice,
) -> Result<(StepOptions, String)> {
    let kernels_set_by = match (opts.compute_efficiency, replay) {
        (Some(_), _) => Some("--compute-efficiency sets every kernel's rate"),
        (None, true) => Some("--replay times compute as the projection's own busy-waits"),
        (None, false) => None,
    };
    let setting = Setting {
        hardware: &hardware.name,
        // A file with a preset's very numbers is that preset.
        preset: presets().contains(hardware),
        measured_fit,
        kernels_set_by,
    };
    let chosen = choose(&setting, choice)?;
    let opts = StepOptions {
        calibration: chosen.calibration,
        ..opts
    };
    Ok((opts, chosen.said))
}

#[cfg(test)]
#[path = "calibrated_tests.rs"]
mod tests;
