//! The `collbench project` command: the I/O edge around the pure projection. Reads the fit (or
//! a bundled profile) and the specs, runs the projection, prints the table and notes, and writes
//! projection.csv and projection.json with `--out`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::calibrated::{self, CalibrationChoice};
use super::output;
use super::overlap::{measured, OverlapSource};
use super::overlap_sizes::OverlapSizes;
use super::plan::{project, Batch, Projection, Request};
use super::replay;
use super::specs;
use super::step::StepOptions;
use crate::collective::routing::Routing;
use crate::collective::traffic_spec::TrafficSpec;
use crate::collective::Op;
use crate::error::{Error, Result};
use crate::fit::power::weighted_mean;
use crate::fit::schema::FitFile;
use crate::units::format_size;

/// What `collbench project` was asked to do, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectRequest {
    pub fit: Option<PathBuf>,
    pub profile: Option<String>,
    pub model: String,
    pub hardware: Option<String>,
    pub worlds: Vec<usize>,
    pub tps: Vec<usize>,
    pub pps: Vec<usize>,
    pub eps: Vec<usize>,
    pub seq_len: Option<usize>,
    pub batch: Batch,
    pub microbatches: Option<usize>,
    pub opts: StepOptions,
    /// `--ep-load` was given: the fit's alltoallv router does not replace it.
    pub ep_load_given: bool,
    /// `--calibration`.
    pub calibration: CalibrationChoice,
    /// `--replay`: timed steps to replay on the host backend.
    pub replay: Option<usize>,
    /// `--replay-timeout`: how long a replay rank may finish no step.
    pub replay_timeout: Duration,
    pub out: Option<PathBuf>,
    /// `--force`: replace the files of an earlier `--out`.
    pub force: bool,
    pub command_line: Vec<String>,
}

/// The router of the fit's first alltoallv model whose traffic is the routing model.
fn fit_router(fit: &FitFile) -> Option<Routing> {
    (fit.models.iter())
        .filter(|m| m.op == Op::AllToAllV)
        .find_map(|m| m.traffic.as_deref().and_then(TrafficSpec::routing_of_label))
}

/// `opts` with the fit's measured overlap slowdowns where `--overlap-slowdown` was not given
/// (nor `--replay`, whose compute stand-in overlap cannot slow), and the line that says so
/// (printed once the projection stands: a refused request prints its one line only). The
/// table's first line names the source either way.
fn with_measured_overlap(
    opts: StepOptions,
    fit: &FitFile,
    replay: bool,
) -> (StepOptions, Option<String>) {
    let found = measured(fit).filter(|_| opts.overlap_source == OverlapSource::Default && !replay);
    let Some(m) = found else {
        return (opts, None);
    };
    let said = format!(
        "collbench: overlapped compute {:.0}% slower and overlapped collectives x{:.3}, as the \
         fit's runs measured them beside a {} load (medians over {} sizes; sweep \
         --with-compute){}; --overlap-slowdown sets the compute's instead",
        100.0 * m.sigma,
        m.comm,
        m.load.trim_start_matches("compute "),
        m.sizes,
        by_size_text(&m.by_size)
    );
    let opts = StepOptions {
        overlap_slowdown: m.sigma,
        comm_overlap_slowdown: m.comm,
        overlap_source: OverlapSource::Measured,
        overlap_sizes: m.by_size,
        ..opts
    };
    (opts, Some(said))
}

/// How the slowdowns by size are used, for the line that says where they came from.
fn by_size_text(t: &OverlapSizes) -> String {
    match t.sizes() {
        [] => String::new(),
        [only] => format!(
            "; every FSDP collective at its one size, {}",
            format_size(only.bytes as usize)
        ),
        [first, .., last] => format!(
            "; each FSDP collective at its own size, interpolated between {} (σ {:.0}%) and {} \
             (σ {:.0}%)",
            format_size(first.bytes as usize),
            100.0 * first.sigma,
            format_size(last.bytes as usize),
            100.0 * last.sigma
        ),
    }
}

/// `opts` with the fit's slowdowns of DP-like groups at once ([`super::at_once`]), and the
/// line that says so (printed, as the overlap's, once the projection stands); as measured
/// alone under `--replay`, whose replayed collectives run one group.
fn with_measured_at_once(
    opts: StepOptions,
    fit: &FitFile,
    replay: bool,
) -> (StepOptions, Option<String>) {
    let Some(m) = super::at_once::measured(fit).filter(|_| !replay) else {
        return (opts, None);
    };
    let said = format!(
        "collbench: data-parallel AllGathers x{:.3} and ReduceScatters x{:.3} in layouts with \
         tp > 1, whose tp DP groups run at once, as the fit's runs measured groups at once \
         ({}; medians over {} sizes; sweep --split)",
        m.factors.gather, m.factors.reduce, m.splits, m.sizes
    );
    let opts = StepOptions {
        dp_at_once: m.factors,
        ..opts
    };
    (opts, Some(said))
}

/// `opts` with the fit's slowdowns of a TP AllReduce at once with DP collectives
/// ([`super::at_once::measured_tp_beside`]), and the line that says so; none under
/// `--replay`, whose schedule runs its collectives one at a time.
fn with_measured_tp_beside(
    opts: StepOptions,
    fit: &FitFile,
    replay: bool,
) -> (StepOptions, Option<String>) {
    let Some(m) = super::at_once::measured_tp_beside(fit).filter(|_| !replay) else {
        return (opts, None);
    };
    let f = m.factors;
    let said = format!(
        "collbench: in layouts with tp > 1, FSDP communication left after a unit's compute runs \
         beside its TP AllReduces, the AllReduces x{:.3}, AllGathers x{:.3} and ReduceScatters \
         x{:.3}, as the fit's runs measured them at once ({}; medians over {} slowdowns; sweep \
         --concurrent)",
        f.allreduce, f.gather, f.reduce, m.runs, m.sizes
    );
    let opts = StepOptions {
        tp_beside_dp: Some(f),
        ..opts
    };
    (opts, Some(said))
}

/// Runs the command; exit code 0 (errors are `Err`).
pub fn run_project(req: &ProjectRequest) -> Result<u8> {
    let (fit, network) = network(req)?;
    let model = specs::model(&req.model)?;
    let hardware =
        match (&req.hardware, &req.profile) {
            (Some(h), _) => specs::hardware(h)?,
            (None, Some(p)) => specs::profile_hardware(p)
                .ok_or_else(|| Error::usage(format!("give --hardware for profile {p}")))?,
            (None, None) => return Err(Error::usage(
                "--hardware is required with --fit (a preset: v100, a100, h100, h200, or a TOML \
                 file)",
            )),
        };
    if let Some(out) = &req.out {
        check_out(out)?;
        output::check_files(out, req.replay.is_some(), req.force)?;
    }
    let (opts, overlap_said) = with_measured_overlap(
        StepOptions {
            ep_router: (!req.ep_load_given).then(|| fit_router(&fit)).flatten(),
            ..req.opts
        },
        &fit,
        req.replay.is_some(),
    );
    let (opts, at_once_said) = with_measured_at_once(opts, &fit, req.replay.is_some());
    let (opts, tp_beside_said) = with_measured_tp_beside(opts, &fit, req.replay.is_some());
    let (opts, calibration_said) = calibrated::apply(
        opts,
        &hardware,
        req.fit.is_some(),
        req.replay.is_some(),
        &req.calibration,
    )?;
    let request = Request {
        seq: req.seq_len.unwrap_or(model.seq_len),
        model,
        hardware,
        worlds: req.worlds.clone(),
        tps: req.tps.clone(),
        pps: req.pps.clone(),
        eps: req.eps.clone(),
        batch: req.batch,
        microbatches: req.microbatches,
        opts,
        comm_power_w: measured_comm_power(&fit),
        unfit_steps: false,
    };
    if let Some(r) = &request.opts.ep_router {
        crate::say!(
            "collbench: MoE AllToAll load from the fit's alltoallv traffic (a router of {} \
             tokens and {} experts per rank, top-{}, zipf {}): the busiest rank's tokens over \
             the mean at each layout's --ep; --ep-load overrides it",
            r.tokens,
            r.experts,
            r.top_k,
            r.zipf
        );
    }
    if let Some(w) = request.comm_power_w {
        crate::say!(
            "collbench: exposed communication draws {w:.0} W per GPU, as NVML measured in the \
             fit's source runs"
        );
    }
    if req.replay.is_some() {
        let cores = crate::backend::host::affinity::allowed_cpus().len().max(1);
        replay::run::check(&request, cores)?;
    }
    let projection = project(&request, &fit)?;
    for said in [overlap_said, at_once_said, tp_beside_said]
        .into_iter()
        .flatten()
    {
        crate::say!("{said}");
    }
    crate::output::stdout::print(&output::table(&request, &projection, &network));
    for note in &projection.notes {
        crate::say!("collbench: note: {note}");
    }
    crate::say!("{calibration_said}");
    let (replayed, stopped) = match req.replay {
        Some(steps) => {
            let (c, stopped) = run_replay(&request, &projection, &fit, steps, req.replay_timeout)?;
            (Some(c), stopped)
        }
        None => (None, None),
    };
    if let Some(out) = &req.out {
        std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
        write(
            &out.join("projection.csv"),
            output::csv(&request, &projection),
        )?;
        let json = output::json(&request, &projection, &network, &fit, &req.command_line);
        let mut text = serde_json::to_string_pretty(&json)
            .map_err(|e| Error::usage(format!("cannot encode projection.json: {e}")))?;
        text.push('\n');
        write(&out.join("projection.json"), text)?;
        crate::say!(
            "collbench: {} rows written to {}",
            projection.rows.len(),
            out.join("projection.csv").display()
        );
        if let Some(c) = &replayed {
            let (m, h) = (&request.model.name, &request.hardware.name);
            let world = request.worlds[0];
            write(&out.join("replay.csv"), replay::csv(m, h, world, c))?;
        }
    }
    match stopped {
        None => Ok(0),
        Some(e) => Err(stopped_replay(e, replayed.as_ref(), req)),
    }
}

/// The error of a replay whose ranks were stopped early, saying what was kept.
fn stopped_replay(e: Error, c: Option<&replay::Comparison>, req: &ProjectRequest) -> Error {
    let measured = c.map_or(0, |c| c.steps.len());
    let kept = match &req.out {
        Some(out) => format!(", written to {}", out.join("replay.csv").display()),
        None => String::new(),
    };
    let what = format!(
        "{measured} of {} replay step(s) measured{kept}",
        req.replay.unwrap_or(0)
    );
    match e {
        Error::Interrupted(why) => Error::Interrupted(format!("{why}; {what}")),
        Error::Rank(why) => Error::Rank(format!("{why}; {what}")),
        other => other,
    }
}

/// Replays the projection's one row and prints the comparison of the steps measured; the
/// error why the ranks were stopped early, if they were.
fn run_replay(
    request: &Request,
    projection: &Projection,
    fit: &FitFile,
    steps: usize,
    stall: Duration,
) -> Result<(replay::Comparison, Option<Error>)> {
    let row =
        match &projection.rows[..] {
            [row] if row.fits_memory => row,
            _ => return Err(Error::usage(
                "--replay: the layout does not fit in the hardware's memory; raise hbm_gb in the \
                 hardware spec or give a smaller model",
            )),
        };
    let (c, stopped) = replay::run::replay(request, row, fit, steps, stall)?;
    if !c.steps.is_empty() {
        crate::output::stdout::print(&c.summary(row.world));
    }
    Ok((c, stopped))
}

/// The fit to read and a name for it.
fn network(req: &ProjectRequest) -> Result<(FitFile, String)> {
    match (&req.fit, &req.profile) {
        (Some(_), Some(_)) => Err(Error::usage("give --fit or --profile, not both")),
        (Some(path), None) => Ok((FitFile::read(path)?, format!("fit {}", path.display()))),
        (None, Some(name)) => Ok((specs::profile(name)?, format!("profile {}", name.trim()))),
        (None, None) => Err(Error::usage(format!(
            "give --fit fit.json or --profile NAME (bundled: {})",
            specs::profile_names().join(", ")
        ))),
    }
}

/// The sample-weighted mean GPU power of the fit's source runs that NVML measured.
pub fn measured_comm_power(fit: &FitFile) -> Option<f64> {
    let measured = fit.sources.iter().filter_map(|s| s.gpu_power.as_ref());
    weighted_mean(measured.map(|p| (p.power_w_mean, p.samples))).map(|(mean, _)| mean)
}

/// `--out` must be a folder or not exist yet, under an existing parent.
fn check_out(out: &Path) -> Result<()> {
    if out.exists() && !out.is_dir() {
        return Err(Error::usage(format!(
            "--out {}: exists and is not a folder",
            out.display()
        )));
    }
    Ok(())
}

fn write(path: &Path, text: String) -> Result<()> {
    // Existing files were refused (or --force given) before projecting.
    crate::output::file::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::schema::SourcePower;

    fn power(mean: f64, samples: u64) -> Option<SourcePower> {
        Some(SourcePower {
            power_w_mean: mean,
            power_w_max: mean + 50.0,
            samples,
            gpus: vec!["NVIDIA H100 80GB HBM3".into()],
        })
    }

    #[test]
    fn measured_power_is_the_sample_weighted_mean_of_the_sources() {
        let mut fit = specs::profile("h100-ib400").unwrap();
        assert_eq!(measured_comm_power(&fit), None);
        let mut second = fit.sources[0].clone();
        fit.sources[0].gpu_power = power(200.0, 300);
        second.gpu_power = power(300.0, 100);
        fit.sources.push(second);
        // (200·300 + 300·100) / 400 = 225 W.
        assert_eq!(measured_comm_power(&fit), Some(225.0));
    }
}
