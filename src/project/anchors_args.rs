//! `collbench anchors`: every published run of an anchors file projected, each one's error and
//! each series' change in per-GPU throughput, on stdout and (with `--out`) in anchors.csv.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::anchors::{self, Errors, Projected, Series};
use super::anchors_fit::{self, Fitted, Grouping, HeldOut, Params};
use super::calibration::Calibration;
use crate::error::{Error, Result};
use crate::report::csvio::float;

/// The flags of `collbench anchors`.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  collbench anchors                       # the bundled runs (bench-configs/anchors.toml)
  collbench anchors --out results/anchors # also anchors.csv
  collbench anchors --calibrate           # held-out errors of a fitted calibration

Each row: the published step time (or the one its tokens/s or TFLOP/s give), the projection of
the same model, layout and batch on the run's bundled profile (the roofline, the default
overlap slowdown, as `collbench project`), and the error (projected over published, minus one;
negative: the projection is faster). Each series (one model and layout at several GPU counts)
also gets its change in per-GPU throughput from the smallest GPU count to the largest,
published and projected. Sources and derivations: the file's `source` and `derived` fields.")]
pub struct AnchorsArgs {
    /// An anchors file of `[[anchor]]` tables [default: the bundled bench-configs/anchors.toml].
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Also write anchors.csv into this folder.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also fit a calibration (kernels' time over the roofline's, memory-bound parts' likewise,
    /// idle seconds per layer and pass) per profile, or per profile and framework, and project
    /// every anchor with the one fitted without its series (leave one series out): held-out
    /// errors beside the roofline's, and the set kept.
    #[arg(long)]
    pub calibrate: bool,
}

/// Runs the command; exit code 0.
pub fn run_anchors(args: &AnchorsArgs) -> Result<u8> {
    let list = anchors::load(args.file.as_deref())?;
    let projected = (list.iter())
        .map(|a| anchors::project_anchor(a, Calibration::IDENTITY))
        .collect::<Result<Vec<Projected>>>()?;
    let series = anchors::series(&projected);
    crate::output::stdout::print(&table(&projected, &series));
    let held = match args.calibrate {
        true => Some(calibrate(&list, &projected)?),
        false => None,
    };
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| Error::Os {
            what: format!("creating {}", dir.display()),
            source: e,
        })?;
        let path = dir.join("anchors.csv");
        std::fs::write(&path, csv(&projected, held.as_deref())).map_err(|e| Error::Os {
            what: format!("writing {}", path.display()),
            source: e,
        })?;
    }
    Ok(0)
}

/// The anchors' table, the series' table, and the mean and largest error.
fn table(projected: &[Projected], series: &[Series]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# {:<26} {:>6} {:>3} {:>3} {:>7} {:>11} {:>11} {:>7}  memory",
        "anchor", "gpus", "tp", "pp", "batch", "published", "projected", "error"
    );
    let _ = writeln!(
        t,
        "# {:<26} {:>6} {:>3} {:>3} {:>7} {:>11} {:>11} {:>7}",
        "", "", "", "", "(seq)", "(s)", "(s)", "(%)"
    );
    for p in projected {
        let a = &p.anchor;
        let memory = match p.fits_memory {
            true => String::new(),
            false => format!("needs {:.0} GB: does not fit", p.memory_gb),
        };
        let _ = writeln!(
            t,
            "  {:<26} {:>6} {:>3} {:>3} {:>7} {:>11.3} {:>11.3} {:>+7.1}  {memory}",
            a.id,
            a.world,
            a.tp,
            a.pp,
            a.global_batch,
            a.step_s,
            p.step_s,
            100.0 * p.error()
        );
    }
    let e = Errors::of(projected.iter().map(Projected::error));
    let _ = writeln!(
        t,
        "# {} anchors: mean |error| {:.1}%, largest {:.1}%",
        e.count,
        100.0 * e.mean_abs,
        100.0 * e.largest_abs
    );
    let _ = writeln!(
        t,
        "# {:<26} {:>22} {:>10} {:>10} {:>11}",
        "series", "gpus", "published", "projected", "difference"
    );
    for s in series {
        let worlds: Vec<String> = s.worlds.iter().map(usize::to_string).collect();
        let _ = writeln!(
            t,
            "  {:<26} {:>22} {:>+9.1}% {:>+9.1}% {:>+8.1} pp",
            s.name,
            worlds.join(","),
            100.0 * s.published_change,
            100.0 * s.projected_change,
            100.0 * (s.projected_change - s.published_change)
        );
    }
    t
}

/// anchors.csv's schema.
pub const ANCHORS_SCHEMA: &str = "collbench.anchors/v1";

/// anchors.csv (`collbench.anchors/v1`): one row per anchor.
fn csv(projected: &[Projected], held: Option<&[HeldOut]>) -> String {
    let mut t = String::from(
        "id,series,profile,model,world,tp,pp,vp,global_batch,seq,recompute,reshard,published_step_s,\
         projected_step_s,error,fits_memory,memory_gb,heldout_step_s,heldout_error,\
         compute_scale,memory_scale,layer_gap_s,framework\n",
    );
    for (i, p) in projected.iter().enumerate() {
        let a = &p.anchor;
        let h = held.and_then(|h| h.get(i));
        let held_cols = h.map_or(",,,,".to_string(), |h| {
            let c = h.calibration;
            let (s, e) = (h.projected.step_s, h.projected.error());
            let (s, e) = (float(s), float(e));
            let (cs, ms, gap) = (c.compute_scale, c.memory_scale, c.layer_gap_s);
            format!("{s},{e},{},{},{}", float(cs), float(ms), float(gap))
        });
        let _ = writeln!(
            t,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{held_cols},{}",
            a.id,
            a.series.as_deref().unwrap_or(""),
            a.profile,
            a.model,
            a.world,
            a.tp,
            a.pp,
            a.vp,
            a.global_batch,
            p.seq,
            a.recompute,
            a.reshard,
            float(a.step_s),
            float(p.step_s),
            float(p.error()),
            p.fits_memory,
            float(p.memory_gb),
            a.framework()
        );
    }
    t
}

/// Every grouping's and parameter set's held-out projections; the best one's table printed,
/// with a line per set and whether it beats the roofline on held-out runs. The best one's
/// projections.
fn calibrate(list: &[anchors::Anchor], roofline: &[Projected]) -> Result<Vec<HeldOut>> {
    let mut best: Option<(Grouping, Params, Vec<HeldOut>, Errors)> = None;
    let mut t = String::new();
    let plain = Errors::of(roofline.iter().map(Projected::error));
    for grouping in Grouping::ALL {
        for params in Params::ALL {
            let held = anchors_fit::held_out(list, params, grouping)?;
            let e = anchors_fit::errors(&held);
            let fitted = anchors_fit::per_group(list, params, grouping)?;
            let edge = (fitted.iter())
                .find_map(|f| f.on_edge(params).map(|p| format!("{}'s {p}", f.name())));
            let _ = writeln!(
                t,
                "# calibrating {} {}: held-out mean |error| {:.1}%, largest {:.1}%, {} of {} \
                 within 15% (roofline {:.1}%, {:.1}%, {}){}",
                params.name(),
                grouping.name(),
                100.0 * e.mean_abs,
                100.0 * e.largest_abs,
                e.within_goal,
                e.count,
                100.0 * plain.mean_abs,
                100.0 * plain.largest_abs,
                plain.within_goal,
                match &edge {
                    Some(p) => format!("; {p} ends on its range's edge: not kept"),
                    None => String::new(),
                }
            );
            if edge.is_none() && best.as_ref().map_or(true, |b| e.mean_abs < b.3.mean_abs) {
                best = Some((grouping, params, held, e));
            }
        }
    }
    let Some((grouping, params, held, e)) = best else {
        t.push_str("# kept: none (every set's fit ends a parameter on its range's edge)\n");
        crate::output::stdout::print(&t);
        return Ok(Vec::new());
    };
    // The rule `project --calibration auto` applies per GPU (calibrated::Judged).
    let verdict = match e.mean_abs < plain.mean_abs && e.largest_abs < plain.largest_abs {
        true => "beats the roofline held out, on average and at its largest miss",
        false => "does not beat the roofline held out on both its average and its largest miss",
    };
    let _ = writeln!(
        t,
        "# kept: {} {} ({verdict})",
        params.name(),
        grouping.name()
    );
    let fitted = anchors_fit::per_group(list, params, grouping)?;
    t.push_str(&held_table(&held, &fitted));
    crate::output::stdout::print(&t);
    Ok(held)
}

/// The held-out projections beside the roofline's, each profile's calibration fitted to all its
/// anchors, and the series' changes with the held-out calibrations.
fn held_table(held: &[HeldOut], fitted: &[Fitted]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# held out (leave one series out): {:<14} {:>11} {:>7} {:>8} {:>8} {:>9}",
        "anchor", "projected", "error", "scale", "memory", "gap"
    );
    for h in held {
        let c = h.calibration;
        let _ = writeln!(
            t,
            "  {:<49} {:>11.3} {:>+7.1} {:>8.3} {:>8.3} {:>7.2}ms",
            h.projected.anchor.id,
            h.projected.step_s,
            100.0 * h.projected.error(),
            c.compute_scale,
            c.memory_scale,
            1e3 * c.layer_gap_s
        );
    }
    let e = anchors_fit::errors(held);
    let _ = writeln!(
        t,
        "# held out: mean |error| {:.1}%, largest {:.1}%, {} of {} within 15%",
        100.0 * e.mean_abs,
        100.0 * e.largest_abs,
        e.within_goal,
        e.count
    );
    let projected: Vec<Projected> = held.iter().map(|h| h.projected.clone()).collect();
    for s in anchors::series(&projected) {
        let _ = writeln!(
            t,
            "  series {:<40} published {:>+6.1}%, held out {:>+6.1}% ({:>+5.1} pp)",
            s.name,
            100.0 * s.published_change,
            100.0 * s.projected_change,
            100.0 * (s.projected_change - s.published_change)
        );
    }
    for f in fitted {
        let (c, n) = (f.calibration, f.anchors);
        let _ = writeln!(
            t,
            "# {}: fitted to its {n} anchors: compute_scale {:.3}, memory_scale {:.3}, \
             layer_gap_s {:.5}",
            f.name(),
            c.compute_scale,
            c.memory_scale,
            c.layer_gap_s
        );
    }
    t
}
