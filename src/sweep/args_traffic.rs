//! `--traffic`: who sends how much to whom in an alltoallv sweep, and nccl-tests' variables for
//! the same (`NCCL_TESTS_ALLTOALLV_SPREAD`, `..._MATRIX_FILE`, `..._MATRIX_SCALE`), so that an
//! `alltoallv_perf` recipe carries over unchanged.

use std::path::Path;

use clap::Args;

use crate::collective::traffic_spec::{TrafficSource, TrafficSpec};
use crate::collective::{Layout, Op};
use crate::error::{Error, Result};
use crate::input::{read_text_capped, MAX_DOCUMENT_BYTES};

/// nccl-tests' variables, in the order it reads them: a matrix file wins over a spread.
const SPREAD_ENV: &str = "NCCL_TESTS_ALLTOALLV_SPREAD";
const MATRIX_ENV: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_FILE";
const SCALE_ENV: &str = "NCCL_TESTS_ALLTOALLV_MATRIX_SCALE";

/// `--traffic`.
#[derive(Args, Debug, Default)]
pub struct TrafficFlags {
    /// alltoallv's traffic: uniform; spread[=S] (nccl-tests' distance-weighted spread, S from 0
    /// to 1, default 1); matrix=PATH[,scale=X] (nccl-tests' whitespace-separated bytes matrix,
    /// which fixes the size); fractions=PATH (a CSV of each rank's shares of its sends, rows
    /// summing to 1); moe=TOKENS:EXPERTS:TOP_K:ZIPF[:SEED] (a seeded router: tokens and
    /// experts per rank, Zipf skew) [default: nccl-tests' variables
    /// NCCL_TESTS_ALLTOALLV_MATRIX_FILE/_SCALE or _SPREAD where set, else spread=1, as
    /// alltoallv_perf].
    #[arg(long, value_name = "SPEC", value_parser = clap::value_parser!(TrafficSpec))]
    pub traffic: Option<TrafficSpec>,
}

impl TrafficFlags {
    /// The traffic of the sweep's alltoallv, its file read; `None` where no op is one (a
    /// `--traffic` then is refused: it would do nothing).
    pub fn source(&self, ops: &[Op]) -> Result<Option<TrafficSource>> {
        let uneven = ops.iter().any(|op| op.layout() == Layout::Uneven);
        let spec = match (&self.traffic, uneven) {
            (Some(_), false) => {
                return Err(Error::usage(
                    "--traffic shapes alltoallv; add alltoallv to --op, or drop --traffic",
                ))
            }
            (_, false) => return Ok(None),
            (Some(spec), true) => spec.clone(),
            (None, true) => match from_env(&|k| std::env::var(k).ok())? {
                Some(spec) => spec,
                None => return Ok(Some(TrafficSource::nccl_tests_default())),
            },
        };
        let read = |p: &Path| {
            read_text_capped(p, MAX_DOCUMENT_BYTES, "traffic matrix").map_err(|e| e.to_string())
        };
        let source =
            (spec.read(&read)).map_err(|e| Error::usage(format!("alltoallv traffic: {e}")))?;
        Ok(Some(source))
    }
}

/// nccl-tests' variables as a spec; a value it would clamp or ignore is refused instead.
fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<TrafficSpec>> {
    let spec = match (var(MATRIX_ENV), var(SCALE_ENV), var(SPREAD_ENV)) {
        (Some(path), Some(scale), _) => format!("matrix={path},scale={scale}"),
        (Some(path), None, _) => format!("matrix={path}"),
        (None, _, Some(s)) => format!("spread={s}"),
        (None, _, None) => return Ok(None),
    };
    let spec = spec
        .parse()
        .map_err(|e| Error::usage(format!("from nccl-tests' variables: {e}")))?;
    Ok(Some(spec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
    }

    #[test]
    fn nccl_tests_variables_read_as_it_reads_them() {
        let got = |pairs: &[(&str, &str)]| from_env(&env(pairs)).unwrap();
        assert_eq!(got(&[]), None);
        assert_eq!(got(&[(SPREAD_ENV, "0.0")]), Some(TrafficSpec::Spread(0.0)));
        let matrix = got(&[(MATRIX_ENV, "t.txt"), (SCALE_ENV, "2"), (SPREAD_ENV, "0")]);
        let expected = TrafficSpec::Matrix {
            path: PathBuf::from("t.txt"),
            scale: 2.0,
        };
        assert_eq!(matrix, Some(expected));
    }

    #[test]
    fn a_value_nccl_tests_would_clamp_is_refused_naming_its_variable() {
        let e = from_env(&env(&[(SPREAD_ENV, "1.5")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("nccl-tests' variables") && e.contains("1.5"),
            "{e}"
        );
    }

    #[test]
    fn traffic_without_alltoallv_is_refused_and_without_a_spec_is_nccl_tests_default() {
        let flags = TrafficFlags {
            traffic: Some(TrafficSpec::Spread(0.5)),
        };
        assert!(flags.source(&[Op::AllReduce]).is_err());
        assert_eq!(
            TrafficFlags::default().source(&[Op::AllReduce]).unwrap(),
            None
        );
        let s = flags.source(&[Op::AllToAllV]).unwrap().unwrap();
        assert_eq!(s.label, "spread 0.5");
    }
}
