//! The collective of an nccl-tests table that does not name it (a pasted table without its
//! `# Collective test starting:` line, command line or telling file name): nccl-tests' bus
//! factor, `busbw / algbw`, is 2(n-1)/n for AllReduce, (n-1)/n for AllGather, ReduceScatter,
//! AllToAll, Gather and Scatter and 1 for Broadcast, Reduce and SendRecv; its `redop` column
//! says `none` for the ops that move data and `root` is -1 without a root. Together they name
//! one op, or a short list the user chooses from with `--test`.

use crate::collective::{Op, ReduceOp};

use super::log::LogRun;

/// Rows whose algbw is below this (GB/s) print too few digits for a ratio.
const MIN_ALGBW_GBPS: f64 = 0.5;

/// How close the measured ratio must be to an op's factor (the table prints 2 decimals).
const TOLERANCE: f64 = 0.02;

/// The op of `run` at `world` ranks, and the note that says how it was found; or why it
/// cannot be told.
pub fn infer_op(run: &LogRun, world: usize) -> Result<(Op, String), String> {
    let ratio = bus_ratio(run).ok_or_else(|| {
        "no row has an algbw of at least 0.5 GB/s to read its bus factor from".to_string()
    })?;
    let first = run.rows.first().ok_or("the table has no rows")?;
    let (redop, rooted) = (
        first.redop_name.as_str(),
        first.root.is_some_and(|r| r >= 0),
    );
    let fits = |op: &&Op| {
        // nccl-tests prints busbw = algbw × the bus factor.
        let factor = op.busbw_factor(world);
        (ratio - factor).abs() <= TOLERANCE * factor.max(0.1)
            && prints_redop(**op, redop)
            && op.rooted() == rooted
            && op.runs_at(world)
    };
    let found: Vec<Op> = Op::ALL.iter().filter(fits).copied().collect();
    let seen = format!(
        "busbw/algbw {ratio:.3} at {world} ranks, redop '{redop}', {}",
        if rooted { "a root" } else { "no root" }
    );
    match found[..] {
        [op] => Ok((
            op,
            format!(
                "the log does not name its test: {op} read from its columns ({seen}); give \
                 --test to state it"
            ),
        )),
        [] => Err(format!(
            "the log does not name its test, and no collective fits its columns ({seen}); give \
             --test, e.g. --test all_reduce_perf"
        )),
        _ => {
            Err(format!(
            "the log does not name its test, and its columns ({seen}) fit {}; give --test with \
             one of them",
            found.iter().map(|o| o.nccl_test()).collect::<Vec<_>>().join(", ")
        ))
        }
    }
}

/// Whether `op`'s nccl-tests table prints `redop` in its `redop` column.
fn prints_redop(op: Op, redop: &str) -> bool {
    match op.nccl_test_redop() {
        Some(fixed) => fixed == redop,
        None => ReduceOp::ALL.iter().any(|r| r.name() == redop),
    }
}

/// The median of `busbw / algbw` over the halves with a readable algbw.
fn bus_ratio(run: &LogRun) -> Option<f64> {
    let halves = run.rows.iter().flat_map(|r| [&r.out_of_place, &r.in_place]);
    let mut ratios: Vec<f64> = halves
        .flatten()
        .filter_map(|h| Some((h.algbw_gbps?, h.busbw_gbps?)))
        .filter(|(a, b)| *a >= MIN_ALGBW_GBPS && b.is_finite())
        .map(|(a, b)| b / a)
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    Some(crate::stats::median(&ratios))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::nccl_text;

    /// A real log of five tests on 8 H100s with every line naming a test removed.
    fn unnamed_runs() -> Vec<LogRun> {
        let text = include_str!(
            "../../tests/data/import/nccl-tests/multi_coll_v2.17.8_1node_8proc_h100_allreduce_allgather_rs_alltoall_sendrecv.log"
        );
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains("Collective test") && !l.contains("_perf"))
            .collect();
        let runs = nccl_text::parse(&(kept.join("\n") + "\n")).unwrap();
        assert!(runs.iter().all(|r| r.test.is_none()), "{runs:?}");
        runs
    }

    #[test]
    fn the_columns_name_allreduce_reducescatter_and_sendrecv() {
        let runs = unnamed_runs();
        assert_eq!(runs.len(), 5);
        let inferred: Vec<Result<Op, String>> =
            runs.iter().map(|r| infer_op(r, 8).map(|x| x.0)).collect();
        assert_eq!(inferred[0], Ok(Op::AllReduce));
        assert_eq!(inferred[2], Ok(Op::ReduceScatter));
        assert_eq!(inferred[4], Ok(Op::SendRecv));
        // AllGather and AllToAll print the same columns: the user is asked to choose.
        for i in [1, 3] {
            let e = inferred[i].clone().unwrap_err();
            assert!(e.contains("fit all_gather_perf, alltoall_perf"), "{e}");
        }
        let (_, note) = infer_op(&runs[0], 8).unwrap();
        assert!(
            note.contains("allreduce read from its columns (busbw/algbw 1.750 at 8 ranks"),
            "{note}"
        );
    }

    #[test]
    fn a_wrong_world_or_no_readable_row_is_refused() {
        let runs = unnamed_runs();
        // At 4 ranks AllReduce's factor is 1.5: nothing fits 1.75.
        let e = infer_op(&runs[0], 4).unwrap_err();
        assert!(e.contains("no collective fits"), "{e}");
        // Rows of small messages only, whose algbw prints as 0.01.
        let mut tiny = runs[0].clone();
        for r in &mut tiny.rows {
            for h in [&mut r.out_of_place, &mut r.in_place].into_iter().flatten() {
                h.algbw_gbps = Some(0.01);
            }
        }
        assert!(infer_op(&tiny, 8).unwrap_err().contains("0.5 GB/s"));
    }
}
