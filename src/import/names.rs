//! The names other tools give collectives, element types, reductions, algorithms and
//! protocols, mapped to collbench's. A name collbench does not know is refused by name.

use super::log::Tool;
use crate::collective::{Algo, DType, Op, Proto, ReduceOp};

/// Every binary nccl-tests 2.19 builds (`BIN_FILES_LIST` in its src/Makefile).
const NCCL_TESTS: &[&str] = &[
    "all_reduce_perf",
    "all_gather_perf",
    "broadcast_perf",
    "reduce_scatter_perf",
    "reduce_perf",
    "alltoall_perf",
    "alltoallv_perf",
    "scatter_perf",
    "gather_perf",
    "sendrecv_perf",
    "hypercube_perf",
];

/// Every nccl-tests binary and the op whose row names it ([`Op::nccl_test`]); `None`: a test
/// collbench does not measure.
fn nccl_tests() -> impl Iterator<Item = (&'static str, Option<Op>)> {
    let op_of = |name: &str| Op::ALL.iter().copied().find(|op| op.nccl_test() == name);
    NCCL_TESTS.iter().map(move |&name| (name, op_of(name)))
}

/// The op a nccl-tests binary measures (`all_reduce_perf`, also with a path, `_mpi`, or
/// without `_perf`: `all_reduce`; collbench's name of the op, `allreduce`, too).
pub fn nccl_test_op(test: &str) -> Result<Op, String> {
    let base = test.rsplit('/').next().unwrap_or(test);
    // Builds with MPI name their binaries `all_reduce_perf_mpi`.
    let base = base.strip_suffix("_mpi").unwrap_or(base);
    let with_perf = format!("{base}_perf");
    let own = base.parse::<Op>().ok().map(Op::nccl_test);
    let named = |name: &&str| *name == base || *name == with_perf || Some(*name) == own;
    match nccl_tests().find(|(name, _)| named(name)) {
        Some((_, Some(op))) => Ok(op),
        Some((name, None)) => Err(format!(
            "{name}: collbench does not measure {} yet; this run was not imported",
            name.trim_end_matches("_perf")
        )),
        None => Err(format!(
            "'{base}' is not a nccl-tests binary; known: {}",
            nccl_tests().map(|(n, _)| n).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// A nccl-tests binary a file name points to (`all_reduce_perf_2node.log`, `allgather-8n.txt`),
/// if any: the collective's name with or without `_`, the longest first (`reduce` is inside
/// `all_reduce`).
pub fn nccl_test_in_name(name: &str) -> Option<&'static str> {
    let squeezed: String = name
        .to_ascii_lowercase()
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect();
    let mut known: Vec<&'static str> = nccl_tests().map(|(n, _)| n).collect();
    known.sort_by_key(|n| std::cmp::Reverse(n.len()));
    known.into_iter().find(|n| {
        let op: String = n.trim_end_matches("_perf").replace('_', "");
        squeezed.contains(&op)
    })
}

/// nccl-tests' type names (`test_typenames` in nccl-tests src/common.cu).
/// The names are the dtype's aliases ([`DType::aliases`], defined once in `collective.rs`), or
/// its own name where it has none (fp8: nccl-tests' names are collbench's).
pub fn nccl_dtype(name: &str) -> Result<DType, String> {
    let named =
        |d: &&DType| d.aliases().contains(&name) || (d.aliases().is_empty() && d.name() == name);
    let found = DType::ALL.iter().find(named);
    found.copied().ok_or_else(|| {
        format!(
            "element type '{name}' has no collbench dtype ({})",
            crate::named::names::<DType>().join(", ")
        )
    })
}

/// A reduction as nccl-tests prints it; `none` (and anything) for an op that does not reduce is
/// recorded as `sum`, as collbench's own sweeps record it.
pub fn nccl_redop(name: &str, op: Op) -> Result<ReduceOp, String> {
    if !op.reduces() {
        return Ok(ReduceOp::Sum);
    }
    // nccl-tests' names (`test_opnames`) are collbench's own.
    let found = ReduceOp::ALL.iter().find(|r| r.name() == name);
    found.copied().ok_or_else(|| {
        format!(
            "reduction '{name}' has no collbench redop ({})",
            crate::named::names::<ReduceOp>().join(", ")
        )
    })
}

/// `NCCL_ALGO` as NCCL reports it: one algorithm, or `auto` for a list or an exclusion.
pub fn nccl_algo(value: &str) -> Algo {
    match value.to_ascii_lowercase().as_str() {
        "ring" => Algo::Ring,
        "tree" => Algo::Tree,
        "nvls" | "nvlstree" => Algo::Nvls,
        "collnet" | "collnetdirect" | "collnetchain" => Algo::CollNet,
        _ => Algo::Auto,
    }
}

/// `NCCL_PROTO` as NCCL reports it: one protocol, or `auto` for a list or an exclusion.
pub fn nccl_proto(value: &str) -> Proto {
    match value.to_ascii_lowercase().as_str() {
        "ll" => Proto::Ll,
        "ll128" => Proto::Ll128,
        "simple" => Proto::Simple,
        _ => Proto::Auto,
    }
}

/// Refuses an `--algo` the tool's library does not have for `op` (NCCL has no Bruck
/// AllReduce): the label would contradict what ran.
pub fn check_algo(tool: Tool, op: Op, algo: Option<Algo>) -> Result<(), String> {
    let backend = match tool {
        Tool::Osu => crate::model::call::BackendKind::Mpi,
        Tool::NcclTests => crate::model::call::BackendKind::Nccl,
    };
    let Some(a) = algo else { return Ok(()) };
    let has = backend.algos(op);
    if has.contains(&a) {
        return Ok(());
    }
    let names: Vec<&str> = has.iter().map(|a| a.name()).collect();
    Err(format!(
        "--algo {a}: {} runs {op} with {} only; give one of those or drop --algo",
        match tool {
            Tool::Osu => "MPI",
            Tool::NcclTests => "NCCL",
        },
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binary_maps_or_is_refused_by_name() {
        assert_eq!(nccl_test_op("all_reduce_perf"), Ok(Op::AllReduce));
        assert_eq!(
            nccl_test_op("./build/reduce_scatter_perf"),
            Ok(Op::ReduceScatter)
        );
        assert_eq!(nccl_test_op("all_reduce_perf_mpi"), Ok(Op::AllReduce));
        assert_eq!(nccl_test_op("alltoall_perf"), Ok(Op::AllToAll));
        assert_eq!(nccl_test_op("sendrecv_perf"), Ok(Op::SendRecv));
        assert_eq!(nccl_test_op("gather_perf"), Ok(Op::Gather));
        assert_eq!(nccl_test_op("scatter_perf_mpi"), Ok(Op::Scatter));
        assert_eq!(nccl_test_op("hypercube_perf"), Ok(Op::Hypercube));
        assert_eq!(nccl_test_op("alltoallv_perf"), Ok(Op::AllToAllV));
        assert!(nccl_test_op("ls")
            .unwrap_err()
            .contains("not a nccl-tests binary"));
    }

    #[test]
    fn file_names_name_the_longest_binary() {
        assert_eq!(
            nccl_test_in_name("all_reduce_perf-2n.log"),
            Some("all_reduce_perf")
        );
        assert_eq!(nccl_test_in_name("REDUCE_PERF.txt"), Some("reduce_perf"));
        assert_eq!(
            nccl_test_in_name("all_gather_2019_g12.log"),
            Some("all_gather_perf")
        );
        assert_eq!(
            nccl_test_in_name("allreduce-8n.txt"),
            Some("all_reduce_perf")
        );
        assert_eq!(nccl_test_in_name("run.log"), None);
    }

    #[test]
    fn types_reductions_and_forced_choices() {
        assert_eq!(nccl_dtype("bfloat16"), Ok(DType::BF16));
        assert_eq!(nccl_dtype("int8"), Ok(DType::I8));
        assert_eq!(nccl_dtype("uint64"), Ok(DType::U64));
        assert_eq!(nccl_dtype("f8e5m2"), Ok(DType::F8E5M2));
        assert!(nccl_dtype("e2m1").unwrap_err().contains("e2m1"));
        assert_eq!(nccl_redop("none", Op::AllGather), Ok(ReduceOp::Sum));
        for &r in ReduceOp::ALL {
            assert_eq!(nccl_redop(r.name(), Op::AllReduce), Ok(r));
        }
        assert!(nccl_redop("xor", Op::AllReduce)
            .unwrap_err()
            .contains("'xor'"));
        assert_eq!(nccl_algo("Ring"), Algo::Ring);
        assert_eq!(nccl_algo("Ring,Tree"), Algo::Auto);
        assert_eq!(nccl_proto("LL128"), Proto::Ll128);
        assert_eq!(nccl_proto("^LL"), Proto::Auto);
    }

    #[test]
    fn every_op_is_read_back_from_its_nccl_test_name() {
        for &op in Op::ALL {
            assert_eq!(nccl_test_op(op.nccl_test()), Ok(op));
            assert_eq!(nccl_test_op(&format!("{}_mpi", op.nccl_test())), Ok(op));
            let bare = op.nccl_test().trim_end_matches("_perf");
            assert_eq!(nccl_test_op(bare), Ok(op), "{bare}");
            assert_eq!(nccl_test_op(op.name()), Ok(op), "{op}");
        }
        // Every binary nccl-tests builds is known: an op's, or refused as not measured.
        for name in NCCL_TESTS {
            match Op::ALL.iter().find(|op| op.nccl_test() == *name) {
                Some(&op) => assert_eq!(nccl_test_op(name), Ok(op)),
                None => assert!(nccl_test_op(name).unwrap_err().contains("does not measure")),
            }
        }
        // And every op's binary is one nccl-tests builds.
        assert!(Op::ALL
            .iter()
            .all(|op| NCCL_TESTS.contains(&op.nccl_test())));
    }
}
