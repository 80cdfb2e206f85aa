//! Tests of the command line's parsing into typed options.

use super::*;
use std::time::Duration;

fn parse(args: &[&str]) -> Result<SweepRequest> {
    let mut full = vec!["collbench", "sweep"];
    full.extend_from_slice(args);
    let args = parse_sweep_line(full).map_err(|e| Error::usage(e.to_string()))?;
    args.into_request(vec![])
}

#[test]
fn defaults_are_the_documented_ones() {
    let r = parse(&["--ranks", "2"]).unwrap();
    assert_eq!(
        r.opts.ops,
        vec![Op::AllReduce, Op::AllGather, Op::ReduceScatter]
    );
    assert_eq!(r.opts.sizes.first(), Some(&8));
    assert_eq!(r.opts.sizes.last(), Some(&(64 << 20)));
    assert_eq!(r.opts.world_sizes, vec![2]);
    assert_eq!(r.timeout, Duration::from_secs(60));
    assert_eq!(r.opts.in_place, vec![false]);
}

#[test]
fn bad_values_name_themselves() {
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg(&["--op", "allgatherr"]).contains("allgatherr"));
    assert!(msg(&["--in-place", "maybe"]).contains("maybe"));
    assert!(msg(&["--ranks", "0"]).contains("--ranks 0"));
    assert!(msg(&["--world-sizes", "2,x"]).contains("'x'"));
    assert!(msg(&["-b", "1M", "-e", "1K"]).contains("invert"));
    assert!(msg(&["-f", "0"]).contains("factor"));
    assert_eq!(
        msg(&["-b", "1M", "-e", "1K"]),
        "inverted size range: -b 1M (1 MiB) is larger than -e 1K (1 KiB); give -b <= -e"
    );
    assert_eq!(
        msg(&["-b", "0"]),
        "-b 0: the smallest size must be at least 1 byte"
    );
    assert!(msg(&["-f", "-2"]).starts_with("-f: invalid factor '-2'"));
    assert!(msg(&["--timeout", "0s"]).starts_with("--timeout: invalid duration '0s'"));
    assert_eq!(
        msg(&["--op", "allgather,reducescatter", "--algo", "tree"]),
        "--op allgather,reducescatter with --algo tree: no such combination on the host backend \
         (allgather runs ring; reducescatter runs ring)"
    );
    // An op no algorithm of the backend runs says so.
    assert!(msg(&["--backend", "mpi", "--op", "hypercube"])
        .ends_with("(hypercube is not offered on the mpi backend)"));
}

#[test]
fn proto_is_nccl_only_and_nccl_defaults_to_the_library_choice() {
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        msg(&["--proto", "ll128"]),
        "--proto ll128: protocols are NCCL's; drop --proto or use --backend nccl (this is --backend host)"
    );
    assert!(msg(&["--backend", "mpi", "--proto", "ll"]).contains("--backend mpi"));
    assert!(msg(&["--backend", "nccl", "--proto", "ll256"]).contains("'ll256'"));
    let r = parse(&["--backend", "nccl", "--proto", "ll,simple"]).unwrap();
    assert_eq!(r.protos, vec![Proto::Ll, Proto::Simple]);
    let r = parse(&["--backend", "nccl"]).unwrap();
    assert_eq!(
        (r.protos, r.opts.algos),
        (vec![Proto::Auto], vec![Algo::Auto])
    );
    assert!(parse(&["--ranks", "2"]).unwrap().protos.is_empty());
}

#[test]
fn cuda_graph_is_nccl_only_and_off_by_default() {
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        msg(&["--cuda-graph"]),
        "--cuda-graph captures NCCL calls; drop it or use --backend nccl (this is --backend host)"
    );
    assert!(msg(&["--backend", "mpi", "--cuda-graph"]).contains("--backend mpi"));
    assert!(
        parse(&["--backend", "nccl", "--cuda-graph"])
            .unwrap()
            .cuda_graph
    );
    assert!(!parse(&["--backend", "nccl"]).unwrap().cuda_graph);
    // The loop's graph launches: --graph-launches, nccl-tests' -G N, else 1.
    let launches = |a: &[&str]| parse(a).map(|r| (r.cuda_graph, r.graph_launches));
    assert_eq!(
        launches(&["--backend", "nccl", "-G", "10"]).unwrap(),
        (true, 10)
    );
    let both = ["--backend", "nccl", "-G", "4", "--graph-launches", "4"];
    assert_eq!(launches(&both).unwrap(), (true, 4));
    let graph = ["--backend", "nccl", "--cuda-graph"];
    assert_eq!(launches(&graph).unwrap(), (true, 1));
    assert_eq!(
        launches(&["--backend", "nccl", "-G", "0"]).unwrap(),
        (false, 1)
    );
    assert!(msg(&["--backend", "nccl", "--graph-launches", "3"]).contains("needs --cuda-graph"));
    let apart = ["--backend", "nccl", "-G", "2", "--graph-launches", "3"];
    assert!(msg(&apart).contains("disagree"));
    assert!(msg(&["--backend", "nccl", "-G", "1001"]).contains("at most 1000"));
    assert!(msg(&["--backend", "nccl", "--cuda-graph", "--graph-launches", "0"]).contains("0"));
    let r = parse(&["--backend", "nccl", "--op", "broadcast", "--algo", "nvls"]);
    let e = r.err().unwrap().to_string();
    assert!(e.contains("broadcast runs auto/ring"), "{e}");
    assert!(msg(&["--algo", "nvls"]).contains("on the host backend"));
}

#[test]
fn cta_policy_is_an_nccl_only_list_of_names_and_unset_by_default() {
    use crate::model::call::CtaPolicy;
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        msg(&["--cta-policy", "zero"]),
        "--cta-policy sets NCCL's configuration; drop it or use --backend nccl (this is --backend host)"
    );
    let nccl = |p: &str| parse(&["--backend", "nccl", "--cta-policy", p]);
    assert_eq!(
        nccl("efficiency,ZERO").unwrap().comm.cta_policies,
        vec![CtaPolicy::Efficiency, CtaPolicy::Zero]
    );
    let e = nccl("fast").err().unwrap().to_string();
    assert!(
        e.contains(
            "'--cta-policy <CTA_POLICY>': unknown CTA policy 'fast'; valid values: default, \
             efficiency, zero"
        ),
        "{e}"
    );
    assert!(parse(&["--backend", "nccl"])
        .unwrap()
        .comm
        .cta_policies
        .is_empty());
}

#[test]
fn register_is_an_nccl_only_list_with_none_by_default() {
    use crate::model::call::Register;
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg(&["--register", "local"]).starts_with("--register registers buffers with NCCL"));
    let nccl = |r: &str| parse(&["--backend", "nccl", "--register", r]);
    assert_eq!(
        nccl("none,local,symmetric").unwrap().comm.registers,
        vec![Register::None, Register::Local, Register::Symmetric]
    );
    let default = parse(&["--backend", "nccl"]).unwrap().comm;
    assert!(!default.any());
    assert_eq!(default.setups(), vec![Default::default()]);
    let e = nccl("global").err().unwrap().to_string();
    assert!(
        e.contains("'--register <REGISTER>': unknown registration 'global'"),
        "{e}"
    );
    let e = nccl(" ").err().unwrap().to_string();
    assert!(e.contains("'--register <REGISTER>': empty list"), "{e}");
}

#[test]
fn ctas_are_an_nccl_only_list_of_bounds() {
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg(&["--ctas", "4"]).starts_with("--ctas sets NCCL's configuration; drop it"));
    let nccl = |r: &str| parse(&["--backend", "nccl", "--ctas", r]);
    let axes = nccl("1,4:8,64").unwrap().comm;
    let text: Vec<String> = axes.ctas.iter().map(|c| c.to_string()).collect();
    assert_eq!(text, ["1", "4:8", "64"]);
    assert_eq!(axes.setups().len(), 3);
    let e = nccl("4,65").err().unwrap().to_string();
    assert!(e.starts_with("--ctas: bad CTA bounds '65'"), "{e}");
    let e = msg(&["--backend", "nccl", "--ctas", "8:2", "--register", "local"]);
    assert!(e.contains("MIN is above MAX"), "{e}");
}

#[test]
fn nccl_tests_timing_flags_on_every_backend() {
    use crate::model::plan::LoopTiming;
    use crate::stats::LoopRank;
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    let timing = |a: &[&str]| parse(a).unwrap().opts.loop_timing;
    assert_eq!(timing(&[]), LoopTiming::default());
    assert_eq!(
        timing(&["-m", "4", "-z", "1", "-a", "3"]),
        LoopTiming {
            agg: 4,
            blocking: true,
            rank: LoopRank::Max
        }
    );
    let long = [
        "--backend",
        "mpi",
        "--agg_iters",
        "8",
        "--blocking",
        "0",
        "--average",
        "0",
    ];
    assert_eq!(
        timing(&long),
        LoopTiming {
            agg: 8,
            blocking: false,
            rank: LoopRank::Rank0
        }
    );
    assert_eq!(timing(&["--loop-rank", "min"]).rank, LoopRank::Min);
    assert!(
        msg(&["-z", "2"]).contains("--blocking"),
        "{}",
        msg(&["-z", "2"])
    );
    assert!(msg(&["-a", "4"]).contains("'4'"), "{}", msg(&["-a", "4"]));
    assert_eq!(
        parse(&["--backend", "nccl", "--agg", "8"])
            .unwrap()
            .opts
            .loop_timing
            .agg,
        8
    );
    assert_eq!(
        msg(&["--backend", "nccl", "--agg", "0"]),
        "--agg 0: give 1 to 1024 calls per iteration"
    );
    assert!(msg(&["--backend", "nccl", "--agg", "1025"]).contains("1 to 1024"));
}

#[test]
fn transport_belongs_to_the_host_backend_and_is_refused_elsewhere() {
    use crate::model::plan::TransportKind;
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(parse(&[]).unwrap().opts.transport, TransportKind::Shm);
    assert_eq!(
        parse(&["--transport", "tcp"]).unwrap().opts.transport,
        TransportKind::Tcp
    );
    let e = msg(&["--backend", "mpi", "--transport", "tcp"]);
    assert!(
        e.starts_with("--transport tcp chooses how host-backend ranks move data; the mpi"),
        "{e}"
    );
    assert!(e.contains("mpirun --mca btl"), "{e}");
    let e = msg(&["--backend", "nccl", "--transport", "shm"]);
    assert!(e.contains("NCCL picks its own"), "{e}");
}

#[test]
fn without_algo_each_op_gets_its_own_first_algorithm_and_no_skip_notes() {
    use crate::collective::{Algo, Op};
    let req = parse(&[
        "--op",
        "allreduce,alltoall,broadcast,sendrecv",
        "-b",
        "256",
        "-e",
        "256",
    ])
    .unwrap();
    let plan = req.opts.plan();
    let mut pairs: Vec<(Op, Algo)> = plan
        .points
        .iter()
        .map(|p| (p.call.op, p.call.algo))
        .collect();
    pairs.dedup();
    assert_eq!(
        pairs,
        [
            (Op::AllReduce, Algo::Ring),
            (Op::AllToAll, Algo::Pairwise),
            (Op::Broadcast, Algo::Tree),
            (Op::SendRecv, Algo::Direct)
        ]
    );
    assert!(
        plan.notes.iter().all(|n| !n.contains("has no")),
        "{:?}",
        plan.notes
    );
    // Given, the list applies to every op that has the algorithm, and the others are said.
    let req = parse(&[
        "--op",
        "allreduce,alltoall",
        "--algo",
        "ring,tree",
        "-b",
        "8",
        "-e",
        "8",
    ]);
    let plan = req.unwrap().opts.plan();
    assert!(plan.points.iter().any(|p| p.call.algo == Algo::Tree));
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("alltoall has no ring")),
        "{:?}",
        plan.notes
    );
}

#[test]
fn nccl_tests_flags_carry_their_meanings() {
    #[rustfmt::skip]
    let r = parse(&[
        "-n", "50", "-w", "5", "-d", "half,float", "-o", "max", "-r", "-1", "-T", "30", "-t", "2",
        "-g", "2", "-b", "8", "-e", "40", "-i", "8", "--op", "allreduce,reduce",
    ])
    .unwrap();
    let o = &r.opts;
    assert_eq!((o.iters, o.warmup, o.ranks), (Some(50), Some(5), 4));
    assert_eq!(o.dtypes, [DType::F16, DType::F32]);
    assert_eq!(
        (o.redops.clone(), o.root),
        (vec![ReduceOp::Max], Roots::All)
    );
    assert_eq!(r.timeout, Duration::from_secs(30));
    // -i without -f: nccl-tests' linear steps.
    assert_eq!(o.sizes, [8, 16, 24, 32, 40]);
    // -f 1 with -i too; -f 2 wins over -i, as in nccl-tests.
    let lin = parse(&["-b", "1K", "-e", "3K", "-f", "1", "-i", "1K"]).unwrap();
    assert_eq!(lin.opts.sizes, [1024, 2048, 3072]);
    let geo = parse(&["-b", "1K", "-e", "4K", "-f", "2", "-i", "1K"]).unwrap();
    assert_eq!(geo.opts.sizes, [1024, 2048, 4096]);
    // Long nccl-tests spellings, `all`, and the numbers of -R and -x.
    let all = parse(&[
        "--datatype",
        "all",
        "--warmup_iters",
        "3",
        "--op",
        "all",
        "-o",
        "all",
    ]);
    let all = all.unwrap();
    assert_eq!(all.opts.dtypes, DType::ALL);
    assert_eq!(all.opts.redops, BackendKind::Host.redops());
    assert_eq!(
        (all.opts.warmup, all.opts.ops.len()),
        (Some(3), Op::ALL.len())
    );
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        msg(&["-R", "1"]).contains("--backend nccl"),
        "{}",
        msg(&["-R", "1"])
    );
    // Refused and inconsistent flags: one line each.
    assert!(msg(&["-p", "1"]).starts_with("-p 1 (nccl-tests --parallel_init"));
    assert!(msg(&["--ranks", "3", "-g", "4"]).contains("disagree"));
    assert!(msg(&["-i", "0"]).contains("at least 1 byte"));
    assert!(msg(&["-b", "1", "-e", "1G", "-i", "1"]).contains("at most 10000 sizes"));
    assert!(msg(&["-f", "1"]).contains("or 1 with -i"));
}

#[test]
fn the_nccl_tests_table_measures_both_placements() {
    let r = parse(&["--format", "nccl-tests"]).unwrap();
    assert_eq!(r.opts.in_place, [false, true]);
    assert_eq!(parse(&[]).unwrap().opts.in_place, [false]);
    let e = parse(&["--format", "nccl-tests", "--in-place", "off"]).err();
    let e = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("drop --in-place"), "{e}");
    assert!(parse(&["--format", "nccl-tests", "--in-place", "both"]).is_ok());
}

#[test]
fn json_out_is_a_new_file_in_a_folder_that_exists() {
    let msg = |a: &[&str]| parse(a).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg(&["-J", "/nonexistent-folder/x.json"]).contains("folder does not exist"));
    assert!(msg(&["--json-out", "/"]).contains("already there"));
    let r = parse(&["-J", "new-file-here.json"]).unwrap();
    assert_eq!(r.opts.in_place, [false, true]);
}
