//! The per-op table: one row holds every fact of a collective (as nccl-tests' `testColl`
//! does), and the rest of collbench asks the row. Adding a collective means a row here, its
//! variant in [`Op`], and its kernels in the backends that run it.

use super::semantics::{Factor, Scratch, Semantics, Worlds};
use super::{Algo, Op, NCCL_GROUPED_P2P};
use Algo::*;

/// Every fact of one collective.
pub struct OpRow {
    /// The name in titles and prose (`AllReduce`; nccl-tests' spelling).
    pub title: &'static str,
    /// What a call leaves in the outputs; fixes the layout, the reduction and the root.
    pub semantics: Semantics,
    /// nccl-tests' algorithm-bandwidth factor over S/t.
    pub algbw: Factor,
    /// nccl-tests' bus-bandwidth factor over the algorithm bandwidth.
    pub busbw: Factor,
    /// The world sizes the op runs at.
    pub worlds: Worlds,
    /// Ring phases of its ring schedule (0: not made of ring phases); the fit's ring-shaped
    /// forms apply only where this is not 0.
    pub ring_phases: u32,
    /// The host backend's algorithms, the first being the default.
    pub host: &'static [Algo],
    /// The MPI backend's algorithms (`auto` first; the others forced through `coll_tuned`).
    pub mpi: &'static [Algo],
    /// Open MPI's `coll_tuned` name of the collective (`coll_tuned_<name>_algorithm`).
    pub mpi_tuned_name: Option<&'static str>,
    /// Open MPI's `coll_tuned` algorithm numbers (Open MPI 4.1 and 5.0 agree on them).
    pub mpi_tuned: &'static [(Algo, u32)],
    /// The algorithms the NCCL backend can ask NCCL for (`NCCL_ALGO`).
    pub nccl: &'static [Algo],
    /// The NCCL function that runs the op in one call, or its group of point-to-point calls.
    pub nccl_function: &'static str,
    /// Whether the NCCL backend can issue it as a group of `ncclSend`/`ncclRecv`.
    pub nccl_point_to_point: bool,
    /// Why the NCCL backend does not measure it in place, or `None` where it does.
    pub nccl_no_in_place: Option<&'static str>,
    /// Why the MPI backend does not measure it in place, or `None` where it does.
    pub mpi_no_in_place: Option<&'static str>,
    /// The nccl-tests binary that measures it.
    pub nccl_test: &'static str,
    /// What that binary prints in its `redop` column (its `TimeTest` call): the reduction
    /// (`None`), or this text (`none` for the ops that move data, nothing for hypercube).
    pub nccl_test_redop: Option<&'static str>,
    /// OSU's names of its latency test, lower case (none where OSU has none).
    pub osu_tests: &'static [&'static str],
    /// Whether OSU's message size is what each rank sends or receives (so S = size × p).
    pub osu_size_per_rank: bool,
    /// The algorithms whose models stand for the op in a projection, in order of preference
    /// (`auto` last: a fit that forced an algorithm says more about it).
    pub projection: &'static [Algo],
    /// The scratch each algorithm needs beside the buffers (none where not listed).
    pub scratch: &'static [(Algo, Scratch)],
}

/// The op's row.
pub(super) fn row(op: Op) -> &'static OpRow {
    match op {
        Op::AllReduce => &ALL_REDUCE,
        Op::AllGather => &ALL_GATHER,
        Op::ReduceScatter => &REDUCE_SCATTER,
        Op::Broadcast => &BROADCAST,
        Op::Reduce => &REDUCE,
        Op::AllToAll => &ALL_TO_ALL,
        Op::AllToAllV => &ALL_TO_ALL_V,
        Op::SendRecv => &SEND_RECV,
        Op::Gather => &GATHER,
        Op::Scatter => &SCATTER,
        Op::Hypercube => &HYPERCUBE,
    }
}

/// The facts most rows share; each row states what differs.
const BASE: OpRow = OpRow {
    title: "",
    semantics: Semantics::AllReduce,
    algbw: Factor::One,
    busbw: Factor::One,
    worlds: Worlds::Any,
    ring_phases: 0,
    host: &[],
    mpi: &[Auto],
    mpi_tuned_name: None,
    mpi_tuned: &[],
    nccl: &[Auto],
    nccl_function: NCCL_GROUPED_P2P,
    nccl_point_to_point: false,
    nccl_no_in_place: None,
    mpi_no_in_place: None,
    nccl_test: "",
    nccl_test_redop: None,
    osu_tests: &[],
    osu_size_per_rank: false,
    projection: &[Auto],
    scratch: &[],
};

/// NCCL's point-to-point calls have no in-place form.
const P2P_NOT_IN_PLACE: Option<&str> = Some(
    "NCCL's point-to-point calls have no in-place form (a rank's receives would overwrite data \
     its sends still read; nccl-tests leaves that result unchecked)",
);

const ALL_REDUCE: OpRow = OpRow {
    title: "AllReduce",
    semantics: Semantics::AllReduce,
    busbw: Factor::TwicePeersOverP,
    ring_phases: 2,
    host: &[Ring, Tree, RecursiveDoubling],
    mpi: &[Auto, Ring, RecursiveDoubling, Rabenseifner],
    mpi_tuned_name: Some("allreduce"),
    mpi_tuned: &[(RecursiveDoubling, 3), (Ring, 4), (Rabenseifner, 6)],
    nccl: &[Auto, Ring, Tree, Nvls, CollNet],
    nccl_function: "ncclAllReduce",
    nccl_test: "all_reduce_perf",
    osu_tests: &["allreduce"],
    projection: &[Ring, Tree, RecursiveDoubling, Auto],
    scratch: &[(RecursiveDoubling, Scratch::Partner)],
    ..BASE
};

const ALL_GATHER: OpRow = OpRow {
    title: "AllGather",
    semantics: Semantics::AllGather,
    busbw: Factor::PeersOverP,
    ring_phases: 1,
    host: &[Ring],
    mpi: &[Auto, Ring, RecursiveDoubling, Bruck, NeighborExchange],
    mpi_tuned_name: Some("allgather"),
    mpi_tuned: &[
        (Bruck, 2),
        (RecursiveDoubling, 3),
        (Ring, 4),
        (NeighborExchange, 5),
    ],
    nccl: &[Auto, Ring, Nvls, CollNet],
    nccl_function: "ncclAllGather",
    nccl_test: "all_gather_perf",
    osu_tests: &["allgather"],
    osu_size_per_rank: true,
    projection: &[Ring, Auto],
    scratch: &[(RecursiveDoubling, Scratch::Partner)],
    nccl_test_redop: Some("none"),
    ..BASE
};

const REDUCE_SCATTER: OpRow = OpRow {
    title: "ReduceScatter",
    semantics: Semantics::ReduceScatter,
    busbw: Factor::PeersOverP,
    ring_phases: 1,
    host: &[Ring],
    mpi: &[Auto, RecursiveDoubling, RecursiveHalving],
    mpi_tuned_name: Some("reduce_scatter_block"),
    mpi_tuned: &[(RecursiveDoubling, 2), (RecursiveHalving, 3)],
    nccl: &[Auto, Ring, Nvls, CollNet],
    nccl_function: "ncclReduceScatter",
    nccl_test: "reduce_scatter_perf",
    osu_tests: &["reduce_scatter", "reduce scatter"],
    projection: &[Ring, Auto],
    scratch: &[
        (Ring, Scratch::RingSlices),
        (RecursiveDoubling, Scratch::Partner),
    ],
    ..BASE
};

const BROADCAST: OpRow = OpRow {
    title: "Broadcast",
    semantics: Semantics::Broadcast,
    host: &[Tree],
    mpi: &[Auto, Tree],
    mpi_tuned_name: Some("bcast"),
    // A binary tree from the root.
    mpi_tuned: &[(Tree, 5)],
    nccl: &[Auto, Ring],
    nccl_function: "ncclBroadcast",
    nccl_test: "broadcast_perf",
    osu_tests: &["broadcast", "bcast"],
    projection: &[Ring, Auto],
    nccl_test_redop: Some("none"),
    ..BASE
};

const REDUCE: OpRow = OpRow {
    title: "Reduce",
    semantics: Semantics::Reduce,
    host: &[Tree],
    mpi: &[Auto, Tree, Rabenseifner],
    mpi_tuned_name: Some("reduce"),
    mpi_tuned: &[(Tree, 4), (Rabenseifner, 7)],
    nccl: &[Auto, Ring],
    nccl_function: "ncclReduce",
    nccl_test: "reduce_perf",
    osu_tests: &["reduce"],
    projection: &[Ring, Auto],
    ..BASE
};

const ALL_TO_ALL: OpRow = OpRow {
    title: "AllToAll",
    semantics: Semantics::AllToAll,
    busbw: Factor::PeersOverP,
    host: &[Pairwise, Bruck, Linear],
    mpi: &[Auto, Pairwise, Bruck, Linear],
    mpi_tuned_name: Some("alltoall"),
    mpi_tuned: &[(Linear, 1), (Pairwise, 2), (Bruck, 3)],
    nccl_function: "ncclAlltoAll",
    nccl_point_to_point: true,
    nccl_no_in_place: P2P_NOT_IN_PLACE,
    nccl_test: "alltoall_perf",
    osu_tests: &["alltoall", "all-to-all personalized exchange"],
    osu_size_per_rank: true,
    projection: &[Pairwise, Linear, Auto],
    scratch: &[
        (Bruck, Scratch::BruckBlocks),
        (Pairwise, Scratch::InPlaceCopy),
        (Linear, Scratch::InPlaceCopy),
    ],
    nccl_test_redop: Some("none"),
    ..BASE
};

// nccl-tests' alltoallv.cu: a group of ncclSend/ncclRecv of each pair's own size (NCCL has no
// alltoallv function); its size is the busiest rank's bytes and its busbw that over the time
// times (p-1)/p. It measures in place too but never checks it. Open MPI's coll_tuned numbers
// its alltoallv algorithms 1 basic_linear and 2 pairwise (`ompi_info --param coll tuned --level
// 9`, Open MPI 4.1.4: "Valid values: 0:ignore, 1:basic_linear, 2:pairwise").
const ALL_TO_ALL_V: OpRow = OpRow {
    title: "AlltoAllv",
    semantics: Semantics::AllToAllV,
    busbw: Factor::PeersOverP,
    host: &[Pairwise],
    mpi: &[Auto, Pairwise, Linear],
    mpi_tuned_name: Some("alltoallv"),
    mpi_tuned: &[(Linear, 1), (Pairwise, 2)],
    nccl_point_to_point: true,
    nccl_no_in_place: P2P_NOT_IN_PLACE,
    mpi_no_in_place: Some(
        "MPI_Alltoallv's MPI_IN_PLACE sends the blocks where the receive counts lay them out, \
         not the packed send blocks nccl-tests' alltoallv fills",
    ),
    nccl_test: "alltoallv_perf",
    // OMB's osu_alltoallv sends `size` bytes to every rank (uniform counts), as its alltoall.
    osu_tests: &["alltoallv", "all-to-allv personalized exchange"],
    osu_size_per_rank: true,
    projection: &[Pairwise, Linear, Auto],
    scratch: &[
        (Pairwise, Scratch::InPlaceCopy),
        (Linear, Scratch::InPlaceCopy),
    ],
    nccl_test_redop: Some("none"),
    ..BASE
};

const SEND_RECV: OpRow = OpRow {
    title: "SendRecv",
    semantics: Semantics::SendRecv,
    host: &[Direct],
    // A point-to-point exchange: no collective algorithm to choose.
    nccl_point_to_point: true,
    nccl_no_in_place: P2P_NOT_IN_PLACE,
    nccl_test: "sendrecv_perf",
    projection: &[Direct, Auto],
    scratch: &[(Direct, Scratch::InPlaceCopy)],
    ..BASE
};

// Gather and Scatter in place are well defined on NCCL: it skips a rank's send to itself on
// the same buffer, and no other transfer touches the rank's own block.
const GATHER: OpRow = OpRow {
    title: "Gather",
    semantics: Semantics::Gather,
    busbw: Factor::PeersOverP,
    host: &[Binomial, Linear],
    mpi: &[Auto, Linear, Binomial],
    mpi_tuned_name: Some("gather"),
    // basic_linear and binomial, rooted anywhere.
    mpi_tuned: &[(Linear, 1), (Binomial, 2)],
    nccl_function: "ncclGather",
    nccl_point_to_point: true,
    nccl_test: "gather_perf",
    osu_tests: &["gather"],
    osu_size_per_rank: true,
    projection: &[Binomial, Linear, Auto],
    scratch: &[(Binomial, Scratch::Subtree)],
    nccl_test_redop: Some("none"),
    ..BASE
};

const SCATTER: OpRow = OpRow {
    title: "Scatter",
    semantics: Semantics::Scatter,
    mpi_tuned_name: Some("scatter"),
    nccl_function: "ncclScatter",
    nccl_test: "scatter_perf",
    osu_tests: &["scatter"],
    ..GATHER
};

// nccl-tests' hypercube.cu: an AllGather through ncclSend/ncclRecv in log2(p) groups, whose
// HyperCubeGetBw counts the (p-1)/p of S a rank receives as algbw, with bus factor 1; it skips
// world sizes that are not powers of two. The host runs its exchange schedule (recursive
// doubling of the blocks held); no MPI library or NCCL call has it.
const HYPERCUBE: OpRow = OpRow {
    title: "HyperCube",
    semantics: Semantics::AllGather,
    algbw: Factor::PeersOverP,
    worlds: Worlds::PowersOfTwo,
    host: &[RecursiveDoubling],
    mpi: &[],
    nccl: &[],
    nccl_test: "hypercube_perf",
    projection: &[RecursiveDoubling, Auto],
    nccl_test_redop: Some(""),
    ..BASE
};
