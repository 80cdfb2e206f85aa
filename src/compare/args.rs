//! `collbench compare` on the command line (clap derive only).

use std::path::PathBuf;

use clap::Args;

use super::command::CompareRequest;
use super::diff::Rule;
use crate::error::{Error, Result};

/// `collbench compare`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
collbench compare results/before results/after\n  \
collbench compare results/before results/after --threshold 10% --json\n\n\
A point regresses when B's median time exceeds A's by more than the threshold (equivalently, \
its busbw fell below A's / (1 + threshold)) and by more than noise: more than --min-diff-us, \
and, where both runs have per-iteration samples, significant by the Mann-Whitney U test at \
--alpha (docs/ACCEPTANCE.md, \"Comparing runs\"). Exit codes: 0 no regression, 1 a regression \
or wrong results in B, 2 bad input or no point in common.")]
pub struct CompareArgs {
    /// The baseline results folder.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The results folder judged against it.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Largest growth of the median time that is not a regression, in percent (the % sign is
    /// optional).
    #[arg(
        long,
        value_name = "PCT",
        default_value = "5%",
        allow_hyphen_values = true
    )]
    pub threshold: String,
    /// The smallest difference of median times that can count, in microseconds: below it a
    /// change is the clock's and the scheduler's, whatever the percentage.
    #[arg(long, value_name = "US", default_value_t = 0.1)]
    pub min_diff_us: f64,
    /// Significance level of the rank test of the two runs' per-iteration samples: a
    /// difference counts only when the test's p-value is at most it (1 leaves the test out).
    #[arg(long, default_value_t = 0.01)]
    pub alpha: f64,
    /// Print the comparison as one JSON object (schema collbench.compare/v1).
    #[arg(long)]
    pub json: bool,
}

impl CompareArgs {
    /// The typed request.
    pub fn into_request(self) -> Result<CompareRequest> {
        if !(self.min_diff_us.is_finite() && self.min_diff_us >= 0.0) {
            return Err(Error::usage(format!(
                "--min-diff-us {}: give a non-negative number of microseconds, e.g. 0.1",
                self.min_diff_us
            )));
        }
        if !(self.alpha > 0.0 && self.alpha <= 1.0) {
            return Err(Error::usage(format!(
                "--alpha {}: give a significance level above 0 and at most 1, e.g. 0.01",
                self.alpha
            )));
        }
        let rule = Rule {
            threshold: parse_percent(&self.threshold)?,
            min_diff_us: self.min_diff_us,
            alpha: self.alpha,
        };
        Ok(CompareRequest {
            rule,
            a: self.a,
            b: self.b,
            json: self.json,
        })
    }
}

/// `5%` or `5` → 0.05.
pub fn parse_percent(s: &str) -> Result<f64> {
    let t = s.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    match number.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x / 100.0),
        _ => Err(Error::usage(format!(
            "--threshold '{s}' is not a non-negative percentage; e.g. --threshold 5%"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("5%").unwrap(), 0.05);
        assert_eq!(parse_percent(" 12.5 ").unwrap(), 0.125);
        assert_eq!(parse_percent("0%").unwrap(), 0.0);
        for bad in ["-5%", "x", "nan", "inf%", "%", ""] {
            let msg = parse_percent(bad).unwrap_err().to_string();
            assert!(msg.contains("--threshold") && msg.contains("e.g."), "{msg}");
        }
    }
}
