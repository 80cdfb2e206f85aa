//! What runs beside the measured calls: `--split` (nccl-tests' `NCCL_TESTS_SPLIT` and
//! `NCCL_TESTS_SPLIT_MASK`, read from the flag or, where it is not given, from nccl-tests' own
//! variables, so that its recipes carry over), `--concurrent` and `--with-compute`.

use clap::Args;

use crate::collective::Op;
use crate::error::{Error, Result};
use crate::model::concurrent::Concurrent;
use crate::model::plan::ComputeKind;
use crate::model::split::SplitRule;
use crate::named::{one_of, parse_names};

const SPLIT_ENV: &str = "NCCL_TESTS_SPLIT";
const MASK_ENV: &str = "NCCL_TESTS_SPLIT_MASK";

/// `--split` and `--with-compute`.
#[derive(Args, Debug, Default)]
pub struct SplitFlags {
    /// Split each world into groups that run their calls at the same time, each group also
    /// measured alone: nccl-tests' NCCL_TESTS_SPLIT rule, colour = rank OP VALUE with OP one of
    /// AND OR MOD DIV (or & | % /), VALUE decimal, 0x hexadecimal or 0b binary: 'MOD 8' is one
    /// rank of every 8 per group, 'DIV 8' 8 neighbouring ranks per group [default:
    /// NCCL_TESTS_SPLIT_MASK (=&VALUE, hexadecimal) or NCCL_TESTS_SPLIT where set, else no
    /// split].
    #[arg(long, value_name = "RULE", value_parser = clap::value_parser!(SplitRule))]
    pub split: Option<SplitRule>,
    /// Measure every point again with a compute load beside every rank, and record both
    /// slowdowns (the call's and the compute's) against each alone. Host backend, a thread
    /// beside each rank: memory (STREAM's triad past the caches: competes for memory bandwidth)
    /// or cache (multiply-adds in the first-level cache: competes for the core). NCCL backend:
    /// gemm (cuBLAS BF16 GEMMs on a second stream of the rank's GPU, sized to last as long as
    /// the call).
    #[arg(long, value_name = "KIND", value_parser = one_of::<ComputeKind>())]
    pub with_compute: Option<ComputeKind>,
    /// Run different collectives on different groups of each world at the same time, each
    /// group's call also measured alone (mpi backend, and host backend on one host: each rank's
    /// calls at once in a process of their own): OP@RULE entries, comma separated, RULE as
    /// --split's, such as allreduce@/4,reducescatter@%4 (an AllReduce in every 4 neighbouring
    /// ranks beside a ReduceScatter over one rank of every 4); the ops are the entries', --op is
    /// not used.
    #[arg(long, value_name = "OP@RULE,...", value_parser = clap::value_parser!(Concurrent))]
    pub concurrent: Option<Concurrent>,
}

impl SplitFlags {
    /// The ops measured: `--concurrent`'s entries', else `--op`'s (`op_text`).
    pub fn ops_or(&self, op_text: &str) -> Result<Vec<Op>> {
        match &self.concurrent {
            Some(c) => Ok(c.ops()),
            None => parse_names::<Op>(op_text),
        }
    }

    /// The rule: the flag's, else nccl-tests' variables' (the mask first, as it reads them).
    pub fn rule(&self) -> Result<Option<SplitRule>> {
        match self.split {
            Some(r) => Ok(Some(r)),
            None => from_env(&|k| std::env::var(k).ok()),
        }
    }
}

/// nccl-tests' variables as a rule; one it would read as a single group is refused instead.
fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<SplitRule>> {
    let rule = match (var(MASK_ENV), var(SPLIT_ENV)) {
        (Some(mask), _) => SplitRule::from_mask(&mask).map_err(|e| (MASK_ENV, e)),
        (None, Some(split)) => split.parse().map_err(|e| (SPLIT_ENV, e)),
        (None, None) => return Ok(None),
    };
    rule.map(Some)
        .map_err(|(name, e)| Error::usage(format!("{name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_full(args: &[&str]) -> Result<crate::sweep::request::SweepRequest> {
        let full = ["collbench", "sweep"].iter().chain(args);
        let args = super::super::parse_sweep_line(full).map_err(|e| Error::usage(e.to_string()))?;
        args.into_request(vec![])
    }

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
    }

    #[test]
    fn nccl_tests_variables_are_read_mask_first() {
        let rule = |pairs| from_env(&env(pairs)).unwrap().map(|r| r.to_string());
        assert_eq!(rule(&[]), None);
        assert_eq!(rule(&[(SPLIT_ENV, "MOD 2")]), Some("%2".into()));
        assert_eq!(
            rule(&[(SPLIT_ENV, "MOD 2"), (MASK_ENV, "0x3")]),
            Some("&3".into())
        );
        let bad = from_env(&env(&[(SPLIT_ENV, "XOR 2")]))
            .unwrap_err()
            .to_string();
        assert!(bad.starts_with("NCCL_TESTS_SPLIT: split 'XOR 2'"), "{bad}");
    }

    #[test]
    fn the_gemm_load_is_the_nccl_backends_and_the_host_kernels_the_hosts() {
        // The parser's refusals, then the plan's (`SweepOptions::validate_for`).
        let msg = |a: &[&str]| {
            let checked = parse_full(a).and_then(|r| r.opts.validate_for(r.backend));
            checked.err().map(|e| e.to_string()).unwrap_or_default()
        };
        let gemm = parse_full(&["--backend", "nccl", "--with-compute", "gemm"]).unwrap();
        gemm.opts.validate_for(gemm.backend).unwrap();
        assert_eq!(
            gemm.opts.with_compute,
            Some(crate::model::plan::ComputeKind::Gemm)
        );
        assert!(msg(&["--backend", "nccl", "--with-compute", "memory"])
            .contains("use --with-compute gemm"));
        assert!(msg(&["--with-compute", "gemm"]).contains("use memory or cache"));
        assert!(msg(&["--backend", "mpi", "--with-compute", "gemm"]).contains("mpi backend"));
        let graph = [
            "--backend",
            "nccl",
            "--with-compute",
            "gemm",
            "--cuda-graph",
        ];
        assert!(msg(&graph).contains("drop --cuda-graph"), "{}", msg(&graph));
    }
}
