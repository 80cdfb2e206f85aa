//! The OSU reader against the real files in tests/data/import/osu (see the README there for
//! their sources): every expected value below was read off the file itself.

use super::*;
use crate::import::log::LogRun;

macro_rules! osu_file {
    ($file:literal) => {
        include_str!(concat!("../../tests/data/import/osu/", $file))
    };
}

const ALLGATHER_5: &str = osu_file!("osu_allgather_v5.6.2_default_64rank_2node_impi.txt");
const ALLREDUCE_5: &str = osu_file!("osu_allreduce_v5.6.2_default_64rank_2node_impi.txt");
const ALLREDUCE_7_CHAR: &str = osu_file!("osu_allreduce_v7.4_default_2node_char.txt");
const ALLTOALL_5: &str = osu_file!("osu_alltoall_v5.6.2_default_64rank_2node_impi.txt");
const REDUCE_CUDA_FULL: &str = osu_file!("osu_reduce_cuda_v7.3_full_192rank_excerpt.txt");

fn one_run(text: &str) -> LogRun {
    let mut runs = match parse(text) {
        Ok(runs) => runs,
        Err(e) => panic!("parse failed: {e:?}"),
    };
    assert_eq!(runs.len(), 1);
    runs.remove(0)
}

/// (line, bytes, avg, min, max, iterations, type) of a row.
type R<'a> = (
    usize,
    u64,
    f64,
    Option<f64>,
    Option<f64>,
    Option<usize>,
    &'a str,
);

fn row(run: &LogRun, i: usize) -> R<'_> {
    let r = &run.rows[i];
    let h = r.out_of_place.as_ref().expect("OSU rows have one half");
    (
        r.line,
        r.bytes,
        h.time_us,
        h.min_us,
        h.max_us,
        h.iters,
        &r.type_name,
    )
}

/// (test, version, datatype header, first line, last line, rows, truncated, foreign).
type Facts<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    (usize, usize),
    usize,
    bool,
    usize,
);

fn facts(run: &LogRun) -> Facts<'_> {
    (
        run.test.as_deref(),
        run.tool_version.as_deref(),
        run.header.get("datatype").map(String::as_str),
        (run.first_line, run.last_line),
        run.rows.len(),
        run.truncated,
        run.foreign_lines,
    )
}

#[test]
fn allgather_v5_default_columns() {
    let run = one_run(ALLGATHER_5);
    assert_eq!(
        facts(&run),
        (
            Some("Allgather"),
            Some("5.6.2"),
            None,
            (2, 24),
            21,
            false,
            0
        )
    );
    // OSU 5 prints no datatype: MPI_CHAR for collectives that do not reduce.
    assert_eq!(row(&run, 0), (4, 1, 18.19, None, None, None, "char"));
    assert_eq!(
        row(&run, 20),
        (24, 1048576, 196016.56, None, None, None, "char")
    );
    let sizes: Vec<u64> = run.rows.iter().map(|r| r.bytes).collect();
    assert_eq!(sizes, (0..21).map(|i| 1u64 << i).collect::<Vec<_>>());
    for r in &run.rows {
        assert_eq!(r.count, None);
        assert_eq!(r.root, None);
        assert!(r.in_place.is_none());
        let h = r.out_of_place.as_ref().unwrap();
        assert_eq!(
            (h.algbw_gbps, h.busbw_gbps, h.wrong, h.error),
            (None, None, None, None)
        );
        assert_eq!(h.time_step_us, 0.01);
    }
    assert!(run.ranks.is_empty());
    assert_eq!(op_of(&run, None), Ok(Op::AllGather));
}

#[test]
fn allreduce_v5_default_is_float() {
    let run = one_run(ALLREDUCE_5);
    assert_eq!(
        facts(&run),
        (
            Some("Allreduce"),
            Some("5.6.2"),
            None,
            (2, 22),
            19,
            false,
            0
        )
    );
    // OSU 5 reduces MPI_FLOAT, so its sizes start at 4 B.
    assert_eq!(row(&run, 0), (4, 4, 3.90, None, None, None, "float"));
    assert_eq!(
        row(&run, 18),
        (22, 1048576, 7403.33, None, None, None, "float")
    );
    assert!(run.rows.iter().all(|r| r.redop_name == "sum"));
    assert_eq!(op_of(&run, None), Ok(Op::AllReduce));
}

#[test]
fn allreduce_v7_with_datatype_line() {
    let run = one_run(ALLREDUCE_7_CHAR);
    assert_eq!(
        facts(&run),
        (
            Some("Allreduce"),
            Some("7.4"),
            Some("MPI_CHAR"),
            (2, 25),
            21,
            false,
            0
        )
    );
    assert_eq!(row(&run, 0), (5, 1, 28.46, None, None, None, "char"));
    assert_eq!(row(&run, 1), (6, 2, 64.22, None, None, None, "char"));
    assert_eq!(
        row(&run, 20),
        (25, 1048576, 662.73, None, None, None, "char")
    );
}

#[test]
fn full_columns_give_min_max_and_iterations() {
    let run = one_run(REDUCE_CUDA_FULL);
    // `# OSU MPI-CUDA Reduce Latency Test v7.3`, after an `mpirun ... osu_reduce -d cuda -f`
    // line that is no part of a run.
    assert_eq!(
        facts(&run),
        (
            Some("Reduce"),
            Some("7.3"),
            Some("MPI_CHAR"),
            (3, 16),
            11,
            false,
            0
        )
    );
    assert_eq!(
        row(&run, 0),
        (6, 1, 53.34, Some(24.80), Some(158.96), Some(1000), "char")
    );
    assert_eq!(
        row(&run, 10),
        (
            16,
            1024,
            55.48,
            Some(24.05),
            Some(134.61),
            Some(1000),
            "char"
        )
    );
    assert_eq!(op_of(&run, None), Ok(Op::Reduce));
}

#[test]
fn alltoall_is_read_with_its_size_per_peer() {
    let run = one_run(ALLTOALL_5);
    assert_eq!(
        facts(&run),
        (
            Some("All-to-All Personalized Exchange"),
            Some("5.6.2"),
            None,
            (2, 24),
            21,
            false,
            0
        )
    );
    assert_eq!(row(&run, 0), (4, 1, 43.84, None, None, None, "char"));
    assert_eq!(
        row(&run, 20),
        (24, 1048576, 221031.92, None, None, None, "char")
    );
    assert_eq!(op_of(&run, None), Ok(Op::AllToAll));
    assert_eq!(op_of(&run, Some("osu_alltoall")), Ok(Op::AllToAll));
    // `4  43.84` at 24 ranks: 4 B to every rank, nccl-tests' S = 96 B per rank.
    assert_eq!(total_bytes(Op::AllToAll, 4, 24), 96);
}

#[test]
fn op_of_takes_the_given_test_where_the_log_names_none_and_refuses_a_contradiction() {
    let own = one_run(ALLTOALL_5);
    let e = op_of(&own, Some("allreduce")).unwrap_err();
    assert!(
        e.starts_with("the log says it is an OSU alltoall log, but --test allreduce"),
        "{e}"
    );
    let mut run = own.clone();
    run.test = None;
    assert_eq!(op_of(&run, Some("allreduce")), Ok(Op::AllReduce));
    assert_eq!(op_of(&run, Some("osu_allgather")), Ok(Op::AllGather));
    assert_eq!(op_of(&run, Some("osu_bcast")), Ok(Op::Broadcast));
    assert_eq!(op_of(&run, Some("Reduce_Scatter")), Ok(Op::ReduceScatter));
    assert_eq!(op_of(&run, Some("osu_reduce")), Ok(Op::Reduce));
    assert_eq!(op_of(&run, Some("osu_gather")), Ok(Op::Gather));
    assert_eq!(op_of(&run, Some("scatter")), Ok(Op::Scatter));
    for refused in ["barrier", "osu_barrier"] {
        let e = op_of(&run, Some(refused)).unwrap_err();
        assert!(e.contains("does not measure"), "{refused}: {e}");
    }
    let e = op_of(&run, Some("latency")).unwrap_err();
    assert!(e.contains("'latency'"), "{e}");
    let nameless = LogRun::default();
    let e = op_of(&nameless, None).unwrap_err();
    assert!(e.contains("--test"), "{e}");
}

#[test]
fn total_bytes_of_allgather_is_size_times_world() {
    assert_eq!(total_bytes(Op::AllGather, 1, 64), 64);
    assert_eq!(total_bytes(Op::AllGather, 1048576, 64), 67108864);
    assert_eq!(total_bytes(Op::AllReduce, 1048576, 64), 1048576);
    assert_eq!(total_bytes(Op::Reduce, 1024, 192), 1024);
    assert_eq!(total_bytes(Op::Broadcast, 4096, 8), 4096);
    assert_eq!(total_bytes(Op::ReduceScatter, 4096, 8), 4096);
    assert_eq!(total_bytes(Op::AllGather, u64::MAX / 2, 3), u64::MAX);
    // The real file's largest size on its 64 ranks.
    let run = one_run(ALLGATHER_5);
    let last = run.rows.last().unwrap().bytes;
    assert_eq!(total_bytes(op_of(&run, None).unwrap(), last, 64), 64 << 20);
}

#[test]
fn not_an_osu_file_is_refused_with_its_line() {
    let e = parse("hello\nworld\n").unwrap_err();
    assert_eq!(e.line, 1, "{e:?}");
    assert!(e.msg.contains("not an OSU"), "{}", e.msg);
    assert_eq!(parse("").unwrap_err().line, 1);
    // A title without a table.
    let e = parse("\n# OSU MPI Allreduce Latency Test v7.4\n").unwrap_err();
    assert_eq!(e.line, 2, "{e:?}");
    // A nccl-tests log.
    let nccl = include_str!(
        "../../tests/data/import/nccl-tests/all_reduce_v2.18.0_tagged_stderr_versionheader.log"
    );
    let e = parse(nccl).unwrap_err();
    assert_eq!(e.line, 1, "{e:?}");
}

#[test]
fn row_that_does_not_parse_names_its_line() {
    // Line 13 of the allreduce file is `2048  27.16`.
    let bad = ALLREDUCE_5.replacen("27.16", "27.1x", 1);
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 13, "{e:?}");
    assert!(e.msg.contains("27.1x"), "{}", e.msg);
    // A zero latency.
    let bad = ALLREDUCE_5.replacen("27.16", "0.00", 1);
    assert_eq!(parse(&bad).unwrap_err().line, 13);
    // A field too many, not on the last line.
    let bad = ALLREDUCE_5.replacen("27.16", "27.16  3", 1);
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 13, "{e:?}");
    assert!(e.msg.contains("3 fields"), "{}", e.msg);
    // Iterations that are no whole number (-f).
    let bad = REDUCE_CUDA_FULL.replacen("136.56        1000", "136.56        1e3", 1);
    let e = parse(&bad).unwrap_err();
    assert_eq!(e.line, 15, "{e:?}");
}

#[test]
fn a_last_row_cut_short_is_dropped() {
    let full = one_run(REDUCE_CUDA_FULL);
    let line16 = REDUCE_CUDA_FULL.lines().nth(15).unwrap();
    assert!(line16.starts_with("1024"), "{line16}");
    let start = REDUCE_CUDA_FULL.rfind("\n1024 ").unwrap() + 1;
    let text = &REDUCE_CUDA_FULL[..start + line16.find("24.05").unwrap()];
    let run = one_run(text);
    assert!(run.truncated);
    assert_eq!(run.rows[..], full.rows[..10]);
    assert_eq!(run.last_line, 15);
}

#[test]
fn several_tests_in_one_file_and_launcher_prefixes() {
    let text = format!("{ALLREDUCE_7_CHAR}\n{REDUCE_CUDA_FULL}");
    let runs = parse(&text).unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].rows, one_run(ALLREDUCE_7_CHAR).rows);
    assert_eq!(runs[1].test.as_deref(), Some("Reduce"));
    assert_eq!(runs[1].first_line, 25 + 1 + 3);
    assert_eq!(runs[1].rows.len(), 11);
    // The mpirun line between the two is no row of the first run.
    assert_eq!(runs[0].foreign_lines, 1);
    // `srun --label` prefixes.
    let labelled: String = ALLREDUCE_5.lines().map(|l| format!("0: {l}\n")).collect();
    let run = one_run(&labelled);
    assert_eq!(run.rows, one_run(ALLREDUCE_5).rows);
}

#[test]
fn every_op_is_read_back_from_its_osu_names_with_its_size_rule() {
    for &op in Op::ALL {
        for name in op.osu_tests() {
            assert_eq!(super::lookup(name), Ok(op), "{name}");
            assert_eq!(super::lookup(&name.to_uppercase()), Ok(op), "{name}");
        }
        let expected = if op.osu_size_per_rank() { 32 } else { 8 };
        assert_eq!(total_bytes(op, 8, 4), expected, "{op}");
    }
    assert!(super::lookup("barrier")
        .unwrap_err()
        .contains("does not measure"));
    assert!(super::lookup("sendrecv").is_err());
}
