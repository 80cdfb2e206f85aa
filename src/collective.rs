//! What a collective is: operations, algorithms, element types, and the nccl-tests conventions
//! for buffer sizes and bus bandwidth.
//!
//! `S` (the `bytes` column) is the total buffer size. AllReduce: in = out = S. AllGather: out = S,
//! each rank contributes S/p. ReduceScatter: in = S, each rank receives S/p. Broadcast and Reduce:
//! in = out = S. AllToAll: in = out = S, a block of S/p for (and from) every rank. SendRecv:
//! in = out = S, sent to the next rank and received from the previous one. Gather: out = S at
//! the root, each rank contributes S/p. Scatter: in = S at the root, each rank receives S/p.
//! Hypercube: as AllGather. Counts round down to whole elements (per rank where the op splits
//! the buffer), so the measured `bytes` can be smaller than the requested size.
//!
//! Bus bandwidth makes numbers comparable across world sizes: `busbw = algbw × factor` with factor
//! `2(p-1)/p` for AllReduce, `(p-1)/p` for AllGather, ReduceScatter, AllToAll, Gather and
//! Scatter and 1 for Broadcast, Reduce and SendRecv; nccl-tests' hypercube puts its `(p-1)/p`
//! into algbw instead and has factor 1 (see docs/METHODOLOGY.md for the derivation).
//!
//! Every fact of an op is in its row of the per-op table ([`OpRow`], `collective/table.rs`).

use crate::named::named_enum;

named_enum!(
    /// A collective operation.
    Op, "op", {
        AllReduce => "allreduce",
        AllGather => "allgather",
        ReduceScatter => "reducescatter",
        Broadcast => "broadcast",
        Reduce => "reduce",
        /// Every rank sends a distinct block to every rank (nccl-tests' alltoall).
        AllToAll => "alltoall",
        /// Every rank sends a different amount to every rank, as a traffic pattern says
        /// (`--traffic`; nccl-tests' alltoallv): mixture-of-experts dispatch and combine.
        AllToAllV => "alltoallv",
        /// Every rank r sends S to r+1 and receives S from r-1 (nccl-tests' sendrecv): the
        /// point-to-point step of pipeline parallelism.
        SendRecv => "sendrecv",
        /// Every rank sends its block of S/p to the root, which holds all p blocks in rank order
        /// (nccl-tests' gather).
        Gather => "gather",
        /// The root sends block j of its S to rank j (nccl-tests' scatter).
        Scatter => "scatter",
        /// nccl-tests' hypercube: an AllGather in log2(p) exchanges, step k swapping the 2^k
        /// blocks a rank holds with the rank whose index differs in bit k; powers of two only.
        Hypercube => "hypercube",
    }
);

named_enum!(
    /// The algorithm that carries a collective out.
    Algo, "algo", {
        /// Bandwidth-optimal ring: each rank talks to its two neighbours, p-1 steps per phase.
        Ring => "ring",
        /// Binary tree: reduce towards rank 0, then broadcast back; log2(p) latency terms.
        Tree => "tree",
        /// Recursive doubling: log2(p) pairwise exchanges of the whole buffer; for small messages.
        RecursiveDoubling => "recursive-doubling",
        /// Recursive halving: log2(p) pairwise exchanges of halving parts (ReduceScatter).
        RecursiveHalving => "recursive-halving",
        /// Rabenseifner: a recursive-halving ReduceScatter, then a recursive-doubling AllGather
        /// (AllReduce) or a binomial gather (Reduce); log2(p) latency terms with the ring's
        /// bandwidth.
        Rabenseifner => "rabenseifner",
        /// Bruck's AllGather and AllToAll: ceil(log2 p) steps for any p, blocks rotated locally.
        Bruck => "bruck",
        /// Neighbor exchange AllGather (Chen et al. 2005): p/2 steps exchanging pairs of blocks
        /// with alternating neighbours; even p only.
        NeighborExchange => "neighbor-exchange",
        /// Pairwise exchange AllToAll: in step k (1..p) rank r sends its block for r+k and
        /// receives the block of r-k; p-1 steps of S/p bytes.
        Pairwise => "pairwise",
        /// One message straight to the peer and one from the other (SendRecv).
        Direct => "direct",
        /// Linear Gather/Scatter: the root exchanges one block with every other rank in turn;
        /// p-1 messages at the root, each block crossing one link once.
        Linear => "linear",
        /// Binomial-tree Gather/Scatter: ceil(log2 p) rounds, a subtree's blocks travel as one
        /// message; the root's traffic is the linear one's, its latency log2(p) steps.
        Binomial => "binomial",
        /// The library's own choice (MPI and NCCL backends): whatever it picks per size and world.
        Auto => "auto",
        /// NCCL's NVLink SHARP algorithms (NVLS, NVLSTree): reductions in the NVSwitch.
        Nvls => "nvls",
        /// NCCL's CollNet algorithms (CollNetDirect, CollNetChain): in-network reduction.
        CollNet => "collnet",
    }
);

named_enum!(
    /// The NCCL protocol (`NCCL_PROTO`): how data moves between steps of an algorithm.
    Proto, "protocol", {
        /// Low latency: 8-byte stores with flags, half the bandwidth.
        Ll => "ll",
        /// Low latency in 128-byte lines, most of the bandwidth where NVLink orders stores.
        Ll128 => "ll128",
        /// Simple: bulk copies with fences; the highest bandwidth for large messages.
        Simple => "simple",
        /// NCCL's own choice per size.
        Auto => "auto",
    }
);

named_enum!(
    /// The element type of the buffers.
    DType, "dtype", {
        // The others are nccl-tests' names (`-d float`, its `type` column), the first of them
        // the one it prints; fp8's names are nccl-tests' own.
        F32 => "f32" | "float" | "float32",
        F64 => "f64" | "double" | "float64",
        F16 => "f16" | "half" | "float16",
        BF16 => "bf16" | "bfloat16",
        I32 => "i32" | "int32" | "int",
        I8 => "i8" | "int8" | "char",
        U8 => "u8" | "uint8",
        U32 => "u32" | "uint32",
        I64 => "i64" | "int64",
        U64 => "u64" | "uint64",
        /// OCP FP8 E4M3 (NCCL's `ncclFloat8e4m3`, 2.24+).
        F8E4M3 => "f8e4m3",
        /// OCP FP8 E5M2 (NCCL's `ncclFloat8e5m2`, 2.24+).
        F8E5M2 => "f8e5m2",
    }
);

named_enum!(
    /// The reduction applied by AllReduce, ReduceScatter and Reduce (nccl-tests' `-o` names and
    /// order).
    ReduceOp, "reduction", {
        Sum => "sum",
        Prod => "prod",
        Max => "max",
        Min => "min",
        /// The sum divided by the ranks (NCCL's `ncclAvg`: integers sum then divide, truncating;
        /// floats multiply each input by 1/p rounded to the type, then sum).
        Avg => "avg",
        /// nccl-tests' `mulsum`: NCCL's `ncclRedOpCreatePreMulSum` with rank r's scalar 1 for
        /// even r and 2 for odd r (`ncclVerifiablePremulScalar`), then a sum.
        MulSum => "mulsum",
    }
);

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// Whether the type is a float (else an integer).
    pub fn is_float(self) -> bool {
        match self {
            DType::F32 | DType::F64 | DType::F16 | DType::BF16 => true,
            DType::F8E4M3 | DType::F8E5M2 => true,
            DType::I32 | DType::I8 | DType::U8 | DType::U32 | DType::I64 | DType::U64 => false,
        }
    }

    /// The 8-bit float format of an fp8 type.
    pub fn fp8(self) -> Option<Fp8> {
        match self {
            DType::F8E4M3 => Some(Fp8::E4M3),
            DType::F8E5M2 => Some(Fp8::E5M2),
            _ => None,
        }
    }
}

/// How the NCCL backend records an op run as a group of point-to-point calls.
pub const NCCL_GROUPED_P2P: &str = "ncclSend+ncclRecv";

impl Op {
    /// The op's row of the per-op table: every fact of it in one place.
    pub fn row(self) -> &'static OpRow {
        table::row(self)
    }

    /// The op's name in titles and prose: `AllReduce` for `allreduce`.
    pub fn title(self) -> &'static str {
        self.row().title
    }

    /// What a call of the op leaves in the ranks' outputs.
    pub fn semantics(self) -> Semantics {
        self.row().semantics
    }

    /// Whether the op combines values (and so takes a reduction).
    pub fn reduces(self) -> bool {
        self.semantics().reduces()
    }

    /// Whether the op has a root rank (nccl-tests' `-r`): the source of Broadcast and Scatter,
    /// the destination of Reduce and Gather.
    pub fn rooted(self) -> bool {
        self.semantics().rooted()
    }

    /// Where the op's S bytes sit in one rank's buffers.
    pub fn layout(self) -> Layout {
        self.semantics().layout()
    }

    /// Whether the op splits the buffer into one block per rank.
    pub fn splits_per_rank(self) -> bool {
        self.layout() != Layout::Whole
    }

    /// The nccl-tests algorithm-bandwidth factor for `p` ranks: `algbw = S / t × factor`
    /// (1 but for nccl-tests' hypercube, which counts the (p-1)/p of S a rank receives).
    pub fn algbw_factor(self, p: usize) -> f64 {
        self.row().algbw.at(p)
    }

    /// The nccl-tests bus-bandwidth factor for `p` ranks: `busbw = algbw × factor`.
    pub fn busbw_factor(self, p: usize) -> f64 {
        self.row().busbw.at(p)
    }

    /// Whether the op runs at world size `p` (nccl-tests' hypercube: powers of two only).
    pub fn runs_at(self, p: usize) -> bool {
        self.row().worlds.admits(p)
    }

    /// Ring phases of the op's ring schedule (AllReduce 2: a ReduceScatter then an AllGather;
    /// AllGather and ReduceScatter 1); 0 where the op is not made of ring phases.
    pub fn ring_phases(self) -> u32 {
        self.row().ring_phases
    }

    /// The algorithms the host backend implements for this op.
    pub fn host_algos(self) -> &'static [Algo] {
        self.row().host
    }

    /// The algorithms the MPI backend offers for this op: the library's own choice, and those
    /// it can force on Open MPI (`coll_tuned`).
    pub fn mpi_algos(self) -> &'static [Algo] {
        self.row().mpi
    }

    /// Open MPI's `coll_tuned` collective name of the op and its number for `algo`, where
    /// Open MPI has one (`ompi_info --param coll tuned --level 9`).
    pub fn mpi_tuned(self, algo: Algo) -> Option<(&'static str, u32)> {
        let name = self.row().mpi_tuned_name?;
        let found = self.row().mpi_tuned.iter().find(|(a, _)| *a == algo);
        found.map(|&(_, number)| (name, number))
    }

    /// The algorithms the NCCL backend can ask NCCL for with this op (`NCCL_ALGO`), following
    /// NCCL's enqueue tables: Broadcast and Reduce run rings only. AllToAll and SendRecv are
    /// grouped `ncclSend`/`ncclRecv` calls, which have no algorithm to choose: `auto` only.
    pub fn nccl_algos(self) -> &'static [Algo] {
        self.row().nccl
    }

    /// The NCCL function that runs the op in one call (AllToAll, Gather and Scatter since
    /// NCCL 2.28), or for SendRecv, which has none, its group of [`NCCL_GROUPED_P2P`].
    pub fn nccl_function(self) -> &'static str {
        self.row().nccl_function
    }

    /// Whether the op is built from point-to-point transfers: without NCCL's own function for
    /// it (before 2.28, and SendRecv always) the NCCL backend issues it as a group of `ncclSend`
    /// and `ncclRecv` calls between `ncclGroupStart` and `ncclGroupEnd`, as nccl-tests does.
    /// NCCL's tuning (`NCCL_ALGO`, `NCCL_PROTO`, the cost model behind `ncclGroupSimulateEnd`)
    /// covers the collectives only.
    pub fn nccl_point_to_point(self) -> bool {
        self.row().nccl_point_to_point
    }

    /// Why the NCCL backend does not measure the op in place, or `None` where it does.
    pub fn nccl_no_in_place(self) -> Option<&'static str> {
        self.row().nccl_no_in_place
    }

    /// Why the MPI backend does not measure the op in place, or `None` where it does.
    pub fn mpi_no_in_place(self) -> Option<&'static str> {
        self.row().mpi_no_in_place
    }

    /// The nccl-tests binary that measures the op (nccl-tests src/*.cu; `collbench import`).
    pub fn nccl_test(self) -> &'static str {
        self.row().nccl_test
    }

    /// What nccl-tests prints in its `redop` column for the op: the reduction (`None`), or a
    /// fixed text (`none`, or nothing for hypercube).
    pub fn nccl_test_redop(self) -> Option<&'static str> {
        self.row().nccl_test_redop
    }

    /// The OSU micro-benchmarks' names of the op's latency test, as their titles and binaries
    /// spell them (`# OSU MPI Allreduce Latency Test`, `osu_allreduce`), lower case; none where
    /// OSU has no such collective test.
    pub fn osu_tests(self) -> &'static [&'static str] {
        self.row().osu_tests
    }

    /// Whether OSU's message size is what each rank sends or receives, so nccl-tests' S is
    /// size × p (see [`OpRow::osu_size_per_rank`]).
    pub fn osu_size_per_rank(self) -> bool {
        self.row().osu_size_per_rank
    }

    /// The algorithms whose models stand for the op in a projection, in order of preference.
    pub fn projection_algos(self) -> &'static [Algo] {
        self.row().projection
    }

    /// The scratch a rank allocates beside its buffers to run the op with `algo`.
    pub fn scratch(self, algo: Algo) -> Scratch {
        let found = self.row().scratch.iter().find(|(a, _)| *a == algo);
        found.map_or(Scratch::None, |&(_, s)| s)
    }
}

/// ⌈log2 p⌉ (0 for p <= 1): the rounds of a binomial tree or of Bruck's exchange among `p`
/// ranks, for the host schedules and the fit forms alike.
pub fn ceil_log2(p: usize) -> u32 {
    usize::BITS - p.max(1).saturating_sub(1).leading_zeros()
}

mod fp8;
pub mod routing;
mod semantics;
mod shape;
mod table;
pub mod traffic;
pub mod traffic_spec;
pub mod uneven;
pub use fp8::Fp8;
pub use semantics::{Factor, Layout, Scratch, Semantics, Worlds};
pub use shape::{algbw_gbps, block_count, busbw_gbps, Shape};
pub use table::OpRow;

#[cfg(test)]
mod tests;
