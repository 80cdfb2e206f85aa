//! `--algo` mapped to Open MPI's `coll_tuned` component: with
//! `coll_tuned_use_dynamic_rules` on, `coll_tuned_<op>_algorithm` forces one algorithm per
//! collective. Open MPI reads these variables when MPI starts, so they are set in the
//! environment before `MPI_Init`, and one launch measures one algorithm (or `auto`, which sets
//! nothing and leaves the library's own per-size choice). The numbers are those of
//! `ompi_info --param coll tuned --level 9` (Open MPI 4.1 and 5.0 agree on them). MPICH reads
//! other variables (`MPIR_CVAR_*`); there `auto` is the only meaningful choice.

use crate::collective::{Algo, Op};
use crate::error::{Error, Result};

/// The `coll_tuned` collective name and algorithm number of `algo` for `op`, if Open MPI has one.
pub(super) fn tuned(op: Op, algo: Algo) -> Option<(&'static str, u32)> {
    let name = match op {
        Op::AllReduce => "allreduce",
        Op::AllGather => "allgather",
        Op::ReduceScatter => "reduce_scatter_block",
        Op::Broadcast => "bcast",
        Op::Reduce => "reduce",
    };
    let number = match (op, algo) {
        (Op::AllReduce, Algo::RecursiveDoubling) => 3,
        (Op::AllReduce, Algo::Ring) => 4,
        (Op::AllGather, Algo::RecursiveDoubling) => 3,
        (Op::AllGather, Algo::Ring) => 4,
        (Op::ReduceScatter, Algo::RecursiveDoubling) => 2,
        // Binary trees rooted at rank 0.
        (Op::Broadcast, Algo::Tree) => 5,
        (Op::Reduce, Algo::Tree) => 4,
        _ => return None,
    };
    Some((name, number))
}

/// The environment that forces `algo` for every op of `ops` that has it (empty for `auto`).
pub(super) fn tuned_env(ops: &[Op], algo: Algo) -> Vec<(String, String)> {
    let forced: Vec<(String, String)> = ops
        .iter()
        .filter_map(|&op| tuned(op, algo))
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
                assert_eq!(tuned(op, a).is_some(), a != Algo::Auto, "{op} {a}");
            }
        }
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
