//! `collbench plot` flags (clap derive), kept beside the module so that src/cli.rs only names
//! the subcommand, and their parsing into a [`PlotRequest`].

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};
use crate::units::{parse_list_with, parse_size};

/// `collbench plot`.
#[derive(Args, Debug)]
#[command(
    about = "Draw figures (PNG and SVG) of results folders, a fit and a projection",
    after_help = "Examples:\n  \
collbench plot results/run                       # into results/run/plots/\n  \
collbench plot results/run --fit fit.json        # fitted alpha-beta lines over the latency points\n  \
collbench plot results/a results/b --out figs --format svg --sizes 8,1M,64M\n  \
collbench plot --projection results/proj         # throughput, MFU, tokens/J, SE by GPUs\n\n\
Figures: busbw-<op> and latency-<op> by message size; busbw-vs-world-<op> and\n\
latency-vs-world-<op> at --sizes when several world sizes were measured; projection-*.\n\
An op with more than 10 lines is split over several figures by root, placement, dtype, ...\n\
(e.g. busbw-gather-root2)."
)]
pub struct PlotArgs {
    /// Results folders of `collbench sweep`.
    #[arg(value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// A fit.json of these runs (`collbench fit`): draws the fitted lines over the points.
    #[arg(long, value_name = "FILE")]
    pub fit: Option<PathBuf>,
    /// A projection.json (or the folder of `collbench project --out`): draws its metrics.
    #[arg(long, value_name = "FILE|DIR")]
    pub projection: Option<PathBuf>,
    /// Folder for the figures [default: <first RUN>/plots, or beside the projection].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Image formats, comma separated: png, svg.
    #[arg(long, value_name = "LIST", default_value = "png,svg")]
    pub format: String,
    /// Message sizes of the by-world-size figures (K/M/G binary suffixes) [default: the
    /// smallest, a middle and the largest measured].
    #[arg(long, value_name = "LIST")]
    pub sizes: Option<String>,
    /// Replace figure files that are already there (outputs are never overwritten otherwise).
    #[arg(long)]
    pub force: bool,
}

/// What `collbench plot` was asked to do, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct PlotRequest {
    pub runs: Vec<PathBuf>,
    pub fit: Option<PathBuf>,
    pub projection: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub png: bool,
    pub svg: bool,
    pub sizes: Option<Vec<usize>>,
    pub force: bool,
}

impl PlotArgs {
    /// Parses every value; the first bad one is the error, naming its flag.
    pub fn into_request(self) -> Result<PlotRequest> {
        if self.runs.is_empty() && self.projection.is_none() {
            return Err(Error::usage(
                "give one or more results folders (collbench plot results/<run>) or \
                 --projection FILE",
            ));
        }
        let (png, svg) = flag("--format", parse_formats(&self.format))?;
        let sizes = self
            .sizes
            .as_deref()
            .map(|s| flag("--sizes", parse_sizes(s)))
            .transpose()?;
        Ok(PlotRequest {
            runs: self.runs,
            fit: self.fit,
            projection: self.projection,
            out: self.out,
            png,
            svg,
            sizes,
            force: self.force,
        })
    }
}

/// Prefixes an error with the flag that carried the value, unless it already names it.
fn flag<T>(name: &str, r: Result<T>) -> Result<T> {
    r.map_err(|e| match e {
        Error::Usage(m) if !m.starts_with(name) => Error::Usage(format!("{name}: {m}")),
        other => other,
    })
}

/// `png,svg` → (png, svg).
pub fn parse_formats(s: &str) -> Result<(bool, bool)> {
    let list = parse_list_with(s, |f| match f.trim().to_ascii_lowercase().as_str() {
        "png" => Ok("png"),
        "svg" => Ok("svg"),
        _ => Err(Error::usage(format!(
            "--format '{}' is not one of png, svg",
            f.trim()
        ))),
    })?;
    Ok((list.contains(&"png"), list.contains(&"svg")))
}

fn parse_sizes(s: &str) -> Result<Vec<usize>> {
    parse_list_with(s, |v| match parse_size(v) {
        Ok(0) => Err(Error::usage(format!(
            "--sizes: '{}' is not a positive size",
            v.trim()
        ))),
        Ok(n) => Ok(n),
        Err(e) => Err(Error::usage(format!("--sizes: {e}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_sizes() {
        assert_eq!(parse_formats("png,svg").unwrap(), (true, true));
        assert_eq!(parse_formats("SVG").unwrap(), (false, true));
        let e = parse_formats("png,jpg").unwrap_err().to_string();
        assert!(e.contains("'jpg'"), "{e}");
        assert_eq!(parse_sizes("8,1M").unwrap(), vec![8, 1 << 20]);
        assert!(parse_sizes("0").unwrap_err().to_string().contains("'0'"));
        assert!(parse_sizes("1Q")
            .unwrap_err()
            .to_string()
            .starts_with("--sizes"));
    }
}
