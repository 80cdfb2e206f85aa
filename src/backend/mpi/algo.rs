//! `--algo` mapped to Open MPI's `coll_tuned` component: with
//! `coll_tuned_use_dynamic_rules` on, `coll_tuned_<op>_algorithm` forces one algorithm per
//! collective. Open MPI reads these variables when MPI starts, so they are set in the
//! environment before `MPI_Init`, and one launch measures one algorithm (or `auto`, which sets
//! nothing and leaves the library's own per-size choice). The numbers are those of
//! `ompi_info --param coll tuned --level 9` (Open MPI 4.1 and 5.0 agree on them). Where an
//! algorithm does not apply, Open MPI falls back without saying so (neighbor exchange with odd
//! p: ring; Rabenseifner with fewer elements than the largest power of two <= p: linear).
//! MPICH reads other variables (`MPIR_CVAR_*`), which are not mapped: under any library but
//! Open MPI only `auto` is accepted.

use crate::collective::{Algo, Op};
use crate::error::{Error, Result};

/// The environment that forces `algo` for every op of `ops` that has it (empty for `auto`).
pub(super) fn tuned_env(ops: &[Op], algo: Algo) -> Vec<(String, String)> {
    let forced: Vec<(String, String)> = ops
        .iter()
        .filter_map(|&op| op.mpi_tuned(algo))
        .map(|(name, n)| {
            (
                format!("OMPI_MCA_coll_tuned_{name}_algorithm"),
                n.to_string(),
            )
        })
        .collect();
    if forced.is_empty() {
        return forced;
    }
    let dynamic = ("OMPI_MCA_coll_tuned_use_dynamic_rules".into(), "1".into());
    std::iter::once(dynamic).chain(forced).collect()
}

/// Refuses a forced algorithm under a library that does not read `coll_tuned`'s variables
/// (`version` as `MPI_Get_library_version` says it): the results would name an algorithm the
/// library did not run.
pub(super) fn check_library(algo: Algo, version: &str) -> Result<()> {
    if algo == Algo::Auto || version.contains("Open MPI") {
        return Ok(());
    }
    let first = version.lines().next().unwrap_or(version).trim();
    Err(Error::usage(format!(
        "--algo {algo}: forced algorithms are mapped for Open MPI only, and this is {first}; \
         use --algo auto (docs/METHODOLOGY.md lists MPICH's own MPIR_CVAR_* variables)"
    )))
}

/// The one algorithm of this launch: Open MPI fixes its choice when MPI starts.
pub(super) fn single(algos: &[Algo]) -> Result<Algo> {
    match algos {
        [one] => Ok(*one),
        _ => {
            let names: Vec<&str> = algos.iter().map(|a| a.name()).collect();
            Err(Error::usage(format!(
                "--algo {}: the mpi backend measures one algorithm per launch (Open MPI fixes \
                 it when MPI starts); run one mpirun per algorithm",
                names.join(",")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_sets_nothing_and_ring_forces_ring() {
        assert!(tuned_env(&[Op::AllReduce], Algo::Auto).is_empty());
        let env = tuned_env(&[Op::AllReduce, Op::AllGather, Op::Broadcast], Algo::Ring);
        let want = [
            ("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"),
            ("OMPI_MCA_coll_tuned_allreduce_algorithm", "4"),
            ("OMPI_MCA_coll_tuned_allgather_algorithm", "4"),
        ];
        let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn every_offered_algorithm_but_auto_has_a_number() {
        for &op in Op::ALL {
            for &a in op.mpi_algos() {
                assert_eq!(op.mpi_tuned(a).is_some(), a != Algo::Auto, "{op} {a}");
            }
        }
    }

    #[test]
    fn every_new_variant_has_its_ompi_info_number() {
        let n = |op: Op, a| op.mpi_tuned(a).map(|(_, n)| n);
        assert_eq!(n(Op::AllReduce, Algo::Rabenseifner), Some(6));
        assert_eq!(n(Op::AllGather, Algo::Bruck), Some(2));
        assert_eq!(n(Op::AllGather, Algo::NeighborExchange), Some(5));
        assert_eq!(n(Op::ReduceScatter, Algo::RecursiveHalving), Some(3));
        assert_eq!(n(Op::Reduce, Algo::Rabenseifner), Some(7));
        assert_eq!(n(Op::AllToAll, Algo::Linear), Some(1));
        assert_eq!(n(Op::AllToAll, Algo::Pairwise), Some(2));
        assert_eq!(n(Op::AllToAll, Algo::Bruck), Some(3));
        assert_eq!(n(Op::ReduceScatter, Algo::Ring), None);
    }

    #[test]
    fn only_open_mpi_takes_a_forced_algorithm() {
        let ompi = "Open MPI v4.1.4, package: Debian OpenMPI";
        let mpich = "MPICH Version:      4.0\nMPICH Release date: Fri Jan 21 2022";
        assert!(check_library(Algo::Ring, ompi).is_ok());
        assert!(check_library(Algo::Auto, mpich).is_ok());
        let msg = check_library(Algo::Ring, mpich).unwrap_err().to_string();
        assert!(
            msg.contains("--algo ring") && msg.contains("MPICH Version:      4.0;"),
            "{msg}"
        );
    }

    #[test]
    fn one_algorithm_per_launch() {
        assert_eq!(single(&[Algo::Ring]).unwrap(), Algo::Ring);
        let msg = single(&[Algo::Auto, Algo::Ring]).unwrap_err().to_string();
        assert!(
            msg.contains("auto,ring") && msg.contains("one mpirun"),
            "{msg}"
        );
    }
}
