//! OSU files as points: sizes per rank, `MPI_CHAR` data read as int8, `-f` rows' iterations.

use super::*;

#[test]
fn osu_char_data_as_int8_every_row_kept() {
    let c = osu_convert(&osu_run(OSU_AR_CHAR.text), Op::AllReduce, 2, 2);
    assert_eq!(c.warnings, Vec::<String>::new());
    let first = &c.records[0];
    assert_eq!(
        first.key,
        PointKey {
            backend: "mpi".into(),
            op: Op::AllReduce,
            algo: Algo::Auto,
            dtype: DType::I8,
            redop: ReduceOp::Sum,
            world: 2,
            nodes: 2,
            bytes: 1,
            count: 1,
            in_place: false,
            proto: None,
            root: None,
            comm: Default::default(),
            traffic: None,
            group: None,
            concurrent: None,
        }
    );
    assert_eq!((first.iters, first.warmup), (0, 0));
    assert!(c.records.iter().all(|r| !r.key.in_place));

    let i = import(&c);
    assert_eq!(i.tool, "osu");
    assert_eq!(i.tool_version.as_deref(), Some("7.4"));
    assert_eq!(i.notes, Vec::<String>::new());
    assert_eq!(c.meta.backend, "mpi");
    assert_eq!(c.meta.hosts, vec!["unknown".to_string()]);
    assert_eq!(c.meta.rank_nodes, vec![0, 0]);
    assert_eq!(c.meta.host.hostname, "unknown");
    assert!(c.meta.gpus.is_empty());
}

#[test]
fn osu_float_data_needs_no_note() {
    let c = osu_convert(&osu_run(OSU_AR_FLOAT.text), Op::AllReduce, 64, 2);
    assert_eq!(import(&c).notes, Vec::<String>::new());
    assert_eq!(c.records[0].key.nodes, 2);
}

#[test]
fn osu_allgather_size_is_per_rank() {
    let run = osu_run(OSU_AG.text);
    let c = osu_convert(&run, Op::AllGather, 64, 2);
    // Each of 64 ranks sends the row's size: 1 B from each is 64 B in all.
    let sizes: Vec<(u64, usize)> = run.rows.iter().map(|r| (r.bytes * 64, r.line)).collect();
    let points: Vec<(u64, usize)> = c
        .records
        .iter()
        .zip(&run.rows)
        .map(|(p, r)| (p.key.bytes as u64, r.line))
        .collect();
    assert_eq!(points, sizes);
}

#[test]
fn osu_full_rows_give_their_iterations() {
    let c = osu_convert(&osu_run(OSU_REDUCE_FULL.text), Op::Reduce, 192, 2);
    let r = &c.records[0];
    assert_eq!((r.key.world, r.iters), (192, 1000));
}

/// OMB's osu_alltoallv (title `All-to-Allv Personalized Exchange`, v5.6.3's BENCHMARK string)
/// sends `size` bytes to every rank: an alltoallv of uniform traffic, S = size × p.
#[test]
fn osu_alltoallv_is_uniform_traffic_of_size_per_peer() {
    let text = "# OSU MPI All-to-Allv Personalized Exchange Latency Test v5.6.3\n\
                # Size       Avg Latency(us)\n\
                1                     159.35\n\
                1024                 5056.74\n";
    let run = osu_run(text);
    assert_eq!(crate::import::osu::op_of(&run, None), Ok(Op::AllToAllV));
    let c = osu_convert(&run, Op::AllToAllV, 4, 1);
    let keys: Vec<(usize, usize, Option<&str>)> = (c.records.iter())
        .map(|r| (r.key.bytes, r.key.count, r.key.traffic.as_deref()))
        .collect();
    assert_eq!(
        keys,
        [(4, 4, Some("uniform")), (4096, 4096, Some("uniform"))]
    );
}
