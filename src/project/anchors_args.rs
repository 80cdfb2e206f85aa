//! `collbench anchors`: every published run of an anchors file projected, each one's error and
//! each series' change in per-GPU throughput, on stdout and (with `--out`) in anchors.csv.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;

use super::anchors::{self, Errors, Projected, Series};
use super::anchors_fit::{self, Fitted, Grouping, HeldOut, Params};
use super::calibration::Calibration;
use crate::error::{Error, Result};
use crate::report::csvio::{boolean, float, push_row};

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
    /// Replace the anchors.csv of an earlier --out (never overwritten otherwise).
    #[arg(long, requires = "out")]
    pub force: bool,
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
    // Refused before the work, so that a refusal costs nothing.
    let path = match &args.out {
        Some(dir) => Some(out_path(dir, args.force)?),
        None => None,
    };
    let projected = (list.iter())
        .map(|a| anchors::project_anchor(a, Calibration::IDENTITY))
        .collect::<Result<Vec<Projected>>>()?;
    let series = anchors::series(&projected);
    crate::output::stdout::print(&table(&projected, &series));
    let held = match args.calibrate {
        true => Some(calibrate(&list, &projected)?),
        false => None,
    };
    if let Some(path) = path {
        let text = csv(&projected, held.as_deref());
        crate::output::file::write_atomic(&path, text.as_bytes())?;
    }
    Ok(0)
}

/// `DIR/anchors.csv`, the folder made; an existing file refused unless `force`.
fn out_path(dir: &Path, force: bool) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| Error::Os {
        what: format!("creating {}", dir.display()),
        source: e,
    })?;
    let path = dir.join("anchors.csv");
    crate::output::file::check_new(&path, force)?;
    Ok(path)
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
        let held_cols = match held.and_then(|h| h.get(i)) {
            Some(h) => {
                let c = h.calibration;
                [h.projected.step_s, h.projected.error()]
                    .into_iter()
                    .chain([c.compute_scale, c.memory_scale, c.layer_gap_s])
                    .map(float)
                    .collect()
            }
            None => vec![String::new(); 5],
        };
        // Names are refused unless plain (anchors::is_name), so none needs quoting.
        let mut fields = vec![
            a.id.clone(),
            a.series.clone().unwrap_or_default(),
            a.profile.clone(),
            a.model.clone(),
        ];
        fields.extend([a.world, a.tp, a.pp, a.vp, a.global_batch, p.seq].map(|n| n.to_string()));
        fields.extend([boolean(a.recompute), boolean(a.reshard)]);
        fields.extend([a.step_s, p.step_s, p.error()].map(float));
        fields.extend([boolean(p.fits_memory), float(p.memory_gb)]);
        fields.extend(held_cols);
        fields.push(a.framework().to_string());
        push_row(&mut t, &fields);
    }
    t
}

/// Every grouping's and parameter set's held-out projections; the best one's table printed,
/// with a line per set and whether it beats the roofline on held-out runs. The best one's
/// projections.
fn calibrate(list: &[anchors::Anchor], roofline: &[Projected]) -> Result<Vec<HeldOut>> {
    let mut best: Option<Candidate> = None;
    let mut t = String::new();
    let plain = Errors::of(roofline.iter().map(Projected::error));
    for grouping in Grouping::ALL {
        for params in Params::ALL {
            let c = Candidate::of(list, grouping, params)?;
            let _ = writeln!(t, "{}", c.line(&plain));
            let better = best
                .as_ref()
                .map_or(true, |b| c.errors.mean_abs < b.errors.mean_abs);
            if c.edge.is_none() && better {
                best = Some(c);
            }
        }
    }
    let Some(kept) = best else {
        t.push_str("# kept: none (every set's fit ends a parameter on its range's edge)\n");
        crate::output::stdout::print(&t);
        return Ok(Vec::new());
    };
    // The rule `project --calibration auto` applies per GPU.
    let verdict = match kept.errors.beats(&plain) {
        true => "beats the roofline held out, on average and at its largest miss",
        false => "does not beat the roofline held out on both its average and its largest miss",
    };
    let (params, grouping) = (kept.params.name(), kept.grouping.name());
    let _ = writeln!(t, "# kept: {params} {grouping} ({verdict})");
    t.push_str(&held_table(&kept.held, &kept.fitted));
    crate::output::stdout::print(&t);
    Ok(kept.held)
}

/// One grouping's and parameter set's fits, held out and to all anchors.
struct Candidate {
    grouping: Grouping,
    params: Params,
    held: Vec<HeldOut>,
    errors: Errors,
    fitted: Vec<Fitted>,
    /// The first group's parameter that ended on its range's edge, named.
    edge: Option<String>,
}

impl Candidate {
    fn of(list: &[anchors::Anchor], grouping: Grouping, params: Params) -> Result<Candidate> {
        let held = anchors_fit::held_out(list, params, grouping)?;
        let fitted = anchors_fit::per_group(list, params, grouping)?;
        let edge =
            (fitted.iter()).find_map(|f| f.on_edge(params).map(|p| format!("{}'s {p}", f.name())));
        Ok(Candidate {
            grouping,
            params,
            errors: anchors_fit::errors(&held),
            held,
            fitted,
            edge,
        })
    }

    /// Its line beside the roofline's errors.
    fn line(&self, plain: &Errors) -> String {
        let e = &self.errors;
        let edge = match &self.edge {
            Some(p) => format!("; {p} ends on its range's edge: not kept"),
            None => String::new(),
        };
        format!(
            "# calibrating {} {}: held-out mean |error| {:.1}%, largest {:.1}%, {} of {} within \
             15% (roofline {:.1}%, {:.1}%, {}){edge}",
            self.params.name(),
            self.grouping.name(),
            100.0 * e.mean_abs,
            100.0 * e.largest_abs,
            e.within_goal,
            e.count,
            100.0 * plain.mean_abs,
            100.0 * plain.largest_abs,
            plain.within_goal
        )
    }
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
