//! `collbench compare` on the command line (clap derive only).

use std::path::PathBuf;

use clap::Args;

use super::command::CompareRequest;
use crate::error::{Error, Result};

/// `collbench compare`.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  \
collbench compare results/before results/after\n  \
collbench compare results/before results/after --threshold 10% --json\n\n\
A point regresses when B's median time exceeds A's by more than the threshold (equivalently, \
its busbw fell below A's / (1 + threshold)). Exit codes: 0 no regression, 1 a regression or \
wrong results in B, 2 bad input or no point in common.")]
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
    /// Print the comparison as one JSON object (schema collbench.compare/v1).
    #[arg(long)]
    pub json: bool,
}

impl CompareArgs {
    /// The typed request.
    pub fn into_request(self) -> Result<CompareRequest> {
        Ok(CompareRequest {
            threshold: parse_percent(&self.threshold)?,
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
