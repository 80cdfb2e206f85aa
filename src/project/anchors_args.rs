//! `collbench anchors`: every published run of an anchors file projected, each one's error and
//! each series' change in per-GPU throughput, on stdout and (with `--out`) in anchors.csv.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use super::anchors::{self, Projected, Series};
use crate::error::{Error, Result};
use crate::report::csvio::float;

/// The flags of `collbench anchors`.
#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  collbench anchors                       # the bundled runs (bench-configs/anchors.toml)
  collbench anchors --out results/anchors # also anchors.csv

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
}

/// Runs the command; exit code 0.
pub fn run_anchors(args: &AnchorsArgs) -> Result<u8> {
    let list = anchors::load(args.file.as_deref())?;
    let projected = (list.iter())
        .map(anchors::project_anchor)
        .collect::<Result<Vec<Projected>>>()?;
    let series = anchors::series(&projected);
    crate::output::stdout::print(&table(&projected, &series));
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| Error::Os {
            what: format!("creating {}", dir.display()),
            source: e,
        })?;
        let path = dir.join("anchors.csv");
        std::fs::write(&path, csv(&projected)).map_err(|e| Error::Os {
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
    let errors: Vec<f64> = projected.iter().map(|p| p.error().abs()).collect();
    let mean = errors.iter().sum::<f64>() / errors.len().max(1) as f64;
    let worst = errors.iter().copied().fold(0.0, f64::max);
    let _ = writeln!(
        t,
        "# {} anchors: mean |error| {:.1}%, largest {:.1}%",
        projected.len(),
        100.0 * mean,
        100.0 * worst
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
fn csv(projected: &[Projected]) -> String {
    let mut t = String::from(
        "id,series,profile,model,world,tp,pp,global_batch,seq,recompute,published_step_s,\
         projected_step_s,error,fits_memory,memory_gb\n",
    );
    for p in projected {
        let a = &p.anchor;
        let _ = writeln!(
            t,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            a.id,
            a.series.as_deref().unwrap_or(""),
            a.profile,
            a.model,
            a.world,
            a.tp,
            a.pp,
            a.global_batch,
            p.seq,
            a.recompute,
            float(a.step_s),
            float(p.step_s),
            float(p.error()),
            p.fits_memory,
            float(p.memory_gb)
        );
    }
    t
}
