//! One collective call as the sweep hands it to a backend, and the backends collbench knows of.
//! Plain data: what a backend can do on this machine (availability, telemetry) is asked of
//! `crate::backend`, which adds those methods to [`BackendKind`].

use serde::{Deserialize, Serialize};

use crate::collective::{Algo, DType, Op, ReduceOp, Shape};
use crate::named::named_enum;

/// One collective call as the sweep describes it to a backend.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Call {
    pub op: Op,
    pub algo: Algo,
    pub dtype: DType,
    pub redop: ReduceOp,
    pub shape: Shape,
    /// The root's index in the group for the rooted ops ([`Op::rooted`]); 0 for the others.
    #[serde(default)]
    pub root: usize,
}

named_enum!(
    /// The backends collbench knows of.
    BackendKind, "backend", {
        /// Embedded: rank processes over shared memory.
        Host => "host",
        /// MPI library through rsmpi (cargo feature `mpi`).
        Mpi => "mpi",
        /// NCCL on GPUs (cargo feature `nccl`).
        Nccl => "nccl",
    }
);

impl BackendKind {
    /// The algorithms the backend offers for `op`.
    pub fn algos(self, op: Op) -> &'static [Algo] {
        match self {
            BackendKind::Mpi => op.mpi_algos(),
            BackendKind::Nccl => op.nccl_algos(),
            BackendKind::Host => op.host_algos(),
        }
    }

    /// What the backend runs `op` with, for messages: "allreduce runs ring/tree", or
    /// "hypercube is not offered on the mpi backend".
    pub fn offer(self, op: Op) -> String {
        let names: Vec<&str> = self.algos(op).iter().map(|a| a.name()).collect();
        match names.is_empty() {
            true => format!("{op} is not offered on the {self} backend"),
            false => format!("{op} runs {}", names.join("/")),
        }
    }

    /// The reductions the backend runs: MPI has no average or scaled sum (`MPI_Op`), the host
    /// no scaled sum (nccl-tests' mulsum is an NCCL op).
    pub fn redops(self) -> &'static [ReduceOp] {
        use ReduceOp::{Avg, Max, Min, MulSum, Prod, Sum};
        match self {
            BackendKind::Nccl => &[Sum, Prod, Max, Min, Avg, MulSum],
            BackendKind::Host => &[Sum, Prod, Max, Min, Avg],
            BackendKind::Mpi => &[Sum, Prod, Max, Min],
        }
    }

    /// Why the backend refuses `op` on `dtype` with `redop` in a group of `world` ranks, or
    /// `None` where it runs it. NCCL at world 1: every reducing collective is a copy
    /// (`ncclLaunchOneRank`, src/device/onerank.cu) except a PreMulSum (avg on floats, and
    /// mulsum), which scales in a kernel chosen in host code under `#if
    /// defined(__CUDA_FP8_TYPES_EXIST__) && __CUDA_ARCH__ >= 900`; `__CUDA_ARCH__` is never
    /// defined in host code, so fp8 falls to `default: return ncclInvalidArgument` with no
    /// message. Read in every release with fp8 (2.24.3 to 2.30.7); on an H100 with 2.28.9 a
    /// one-rank sweep of every type and reduction ended in exactly that error
    /// (results/nccl-h100x1); scripts/nccl_onerank_fp8.cu (gpu-check step 05b) isolates it.
    /// Two or more ranks take the ordinary kernels, which have fp8.
    pub fn refuses_at(
        self,
        op: Op,
        dtype: DType,
        redop: ReduceOp,
        world: usize,
    ) -> Option<&'static str> {
        let fp8 = matches!(dtype, DType::F8E4M3 | DType::F8E5M2);
        let pre_mul_sum = matches!(redop, ReduceOp::Avg | ReduceOp::MulSum);
        match self {
            BackendKind::Nccl if world == 1 && op.reduces() && fp8 && pre_mul_sum => Some(
                "NCCL's single-rank path has no fp8 PreMulSum kernel (ncclInvalidArgument); it \
                 runs from 2 ranks",
            ),
            _ => None,
        }
    }

    /// Why the backend does not measure `op` in place, or `None` where it does (NCCL's
    /// point-to-point ops, [`Op::nccl_no_in_place`]).
    pub fn no_in_place(self, op: Op) -> Option<&'static str> {
        match self {
            BackendKind::Nccl => op.nccl_no_in_place(),
            BackendKind::Mpi => op.mpi_no_in_place(),
            BackendKind::Host => None,
        }
    }
}

named_enum!(
    /// How the NCCL backend registers its buffers with each communicator (nccl-tests `-R`).
    Register, "registration", {
        /// No registration (nccl-tests `-R 0`, its default).
        None => "none" | "0",
        /// `ncclCommRegister` of both buffers on every communicator (nccl-tests `-R 1`,
        /// NCCL 2.19+).
        Local => "local" | "1",
        /// `ncclCommWindowRegister` with `NCCL_WIN_COLL_SYMMETRIC` (nccl-tests `-R 2`, NCCL
        /// 2.27+), on buffers from `ncclMemAlloc`.
        Symmetric => "symmetric" | "2",
    }
);

named_enum!(
    /// NCCL's CTA policy (`ncclConfig_t.CTAPolicy`, nccl-tests `-x`).
    CtaPolicy, "CTA policy", {
        /// `NCCL_CTA_POLICY_DEFAULT` (NCCL 2.27+).
        Default => "default" | "0",
        /// `NCCL_CTA_POLICY_EFFICIENCY`: fewer CTAs where they buy little (NCCL 2.27+).
        Efficiency => "efficiency" | "1",
        /// `NCCL_CTA_POLICY_ZERO`: copy engines where NCCL can (NCCL 2.28+).
        Zero => "zero" | "2",
    }
);

impl CtaPolicy {
    /// The NCCL release that has the policy.
    pub fn since(self) -> (i32, i32) {
        match self {
            CtaPolicy::Default | CtaPolicy::Efficiency => (2, 27),
            CtaPolicy::Zero => (2, 28),
        }
    }
}
