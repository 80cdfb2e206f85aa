//! `--op` and `--algo` together: `--algo`'s help from the per-op tables, the host's default
//! algorithms, and the refusal of a pair no op runs.

use super::{Algo, BackendKind, Error, Op, Result};
use crate::collective::ReduceOp;
use crate::named::parse_names;

/// `--algo`'s long help, from the per-op tables: what each backend offers for each op.
pub(super) fn algo_help() -> String {
    let mut text = String::from(
        "Algorithms, comma separated; an op offered none of them is skipped [default: each \
         op's first host algorithm; auto with --backend mpi or nccl]. Offered, per backend and op:",
    );
    for backend in BackendKind::ALL {
        text.push_str(&format!("\n  {backend}:"));
        for op in Op::ALL {
            let algos: Vec<&str> = backend.algos(*op).iter().map(|a| a.name()).collect();
            text.push_str(&format!(" {op} {};", algos.join("|")));
        }
        text.pop();
    }
    text
}

/// The host backend's algorithms when `--algo` is not given: each op's first (ring for the
/// ring ops, tree for Broadcast and Reduce, pairwise for AllToAll, direct for SendRecv), in op
/// order, once each.
pub(super) fn host_default_algos(ops: &[Op]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for name in ops
        .iter()
        .filter_map(|op| op.host_algos().first())
        .map(|a| a.name())
    {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(",")
}

/// Refuses an --op/--algo pair where no op has any of the algorithms (`--op allgather --algo
/// tree`), naming both flags; ops that lack some of the algorithms are skipped with a note.
pub(super) fn check_combinations(
    backend: BackendKind,
    (ops, algos): (&[Op], &[Algo]),
    op_text: &str,
    algo_text: &str,
) -> Result<()> {
    if ops
        .iter()
        .any(|op| algos.iter().any(|a| backend.algos(*op).contains(a)))
    {
        return Ok(());
    }
    let runs: Vec<String> = ops.iter().map(|op| backend.offer(*op)).collect();
    Err(Error::usage(format!(
        "--op {} with --algo {}: no such combination on the {backend} backend ({})",
        op_text.trim(),
        algo_text.trim(),
        runs.join("; ")
    )))
}

/// The reductions of `--redop` (`all`: every one `backend` runs), refusing one it lacks.
pub(super) fn backend_redops(backend: BackendKind, text: &str) -> Result<Vec<ReduceOp>> {
    let offered = backend.redops();
    if text.trim().eq_ignore_ascii_case("all") {
        return Ok(offered.to_vec());
    }
    let redops = parse_names::<ReduceOp>(text)?;
    match redops.iter().find(|r| !offered.contains(r)) {
        Some(r) => Err(Error::usage(format!(
            "--redop {r}: the {backend} backend has no such reduction; it runs {} \
             (mulsum runs on nccl; avg on host and nccl)",
            offered
                .iter()
                .map(|r| r.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(redops),
    }
}
