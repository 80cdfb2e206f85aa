//! The sweep flags that belong to one backend: `--transport` (host), the communicator axes
//! `--register`, `--cta-policy`, `--ctas` (NCCL), each refused in one line where the backend
//! would ignore it; and nccl-tests' timing flags, which every backend takes.

use super::{parse_list, BackendKind, CommAxes, Error, Result, SweepArgs, TransportKind, MAX_AGG};
use crate::collective::Proto;
use crate::model::plan::LoopTiming;
use crate::named::parse_names;

impl SweepArgs {
    /// Launches of the loop's graph: `--graph-launches`, else nccl-tests' `-G N`, else 1;
    /// refused without a graph, where the two disagree, and beside a compute load.
    pub(super) fn graph_launches(&self, cuda_graph: bool) -> Result<usize> {
        if let (true, Some(kind)) = (cuda_graph, self.split.with_compute) {
            return Err(Error::usage(format!(
                "--with-compute {kind} runs beside calls launched on the stream; drop \
                 --cuda-graph (or -G) for this run"
            )));
        }
        let g = self.nccl_tests.cuda_graph_launches.filter(|&n| n > 0);
        if let Some(n) = g.filter(|&n| n > 1000) {
            return Err(Error::usage(format!(
                "-G {n}: at most 1000 launches of the loop's graph"
            )));
        }
        match (self.graph_launches, g) {
            (Some(_), _) if !cuda_graph => Err(Error::usage(
                "--graph-launches needs --cuda-graph (or nccl-tests' -G N)",
            )),
            (Some(a), Some(b)) if u64::from(a) != b => Err(Error::usage(format!(
                "--graph-launches {a} and -G {b} disagree: give one of them"
            ))),
            (Some(a), _) => Ok(a as usize),
            (None, Some(b)) => Ok(b as usize),
            (None, None) => Ok(1),
        }
    }

    /// nccl-tests' `-m`, `-z` and `-a`: `--agg` 1 to [`MAX_AGG`].
    pub(super) fn loop_timing(&self) -> Result<LoopTiming> {
        if !(1..=MAX_AGG).contains(&self.agg) {
            return Err(Error::usage(format!(
                "--agg {}: give 1 to {MAX_AGG} calls per iteration",
                self.agg
            )));
        }
        Ok(LoopTiming {
            agg: self.agg,
            blocking: self.blocking == 1,
            rank: self.loop_rank,
        })
    }

    /// `--transport`: the host backend's; refused with another backend, which would ignore it.
    pub(super) fn transport_kind(&self, backend: BackendKind) -> Result<TransportKind> {
        match (self.transport, backend) {
            (None, _) => Ok(TransportKind::Shm),
            (Some(t), BackendKind::Host) => Ok(t),
            (Some(t), BackendKind::Mpi) => Err(Error::usage(format!(
                "--transport {t} chooses how host-backend ranks move data; the mpi backend moves \
                 them through Open MPI's own transports (choose with `mpirun --mca btl \
                 tcp,self`); drop --transport"
            ))),
            (Some(t), BackendKind::Nccl) => Err(Error::usage(format!(
                "--transport {t} chooses how host-backend ranks move data; NCCL picks its own \
                 (NVLink, PCIe, network; steer it with NCCL_P2P_DISABLE or NCCL_SHM_DISABLE); \
                 drop --transport"
            ))),
        }
    }

    /// `--register`, `--cta-policy` and `--ctas`: lists, for the NCCL backend only.
    pub(super) fn comm_axes(&self, backend: BackendKind) -> Result<CommAxes> {
        let flags = [
            ("--register", "registers buffers with NCCL", &self.register),
            (
                "--cta-policy",
                "sets NCCL's configuration",
                &self.cta_policy,
            ),
            ("--ctas", "sets NCCL's configuration", &self.ctas),
        ];
        if let (true, Some((flag, what, _))) = (
            backend != BackendKind::Nccl,
            flags.iter().find(|f| f.2.is_some()),
        ) {
            return Err(Error::usage(format!(
                "{flag} {what}; drop it or use --backend nccl (this is --backend {backend})"
            )));
        }
        Ok(CommAxes {
            registers: optional_list("--register", &self.register)?,
            cta_policies: optional_list("--cta-policy", &self.cta_policy)?,
            ctas: optional_list("--ctas", &self.ctas)?,
        })
    }
}

/// A list flag's values, empty where the flag was not given; an error names the flag.
fn optional_list<T>(flag: &str, text: &Option<String>) -> Result<Vec<T>>
where
    T: std::str::FromStr<Err = Error> + PartialEq,
{
    match text {
        Some(t) => parse_list(t).map_err(|e| Error::usage(format!("{flag}: {e}"))),
        None => Ok(Vec::new()),
    }
}

/// `--proto`: NCCL protocols, refused for the other backends (they have no such choice).
pub(super) fn parse_protos(backend: BackendKind, text: Option<&str>) -> Result<Vec<Proto>> {
    match (backend, text) {
        (BackendKind::Nccl, t) => parse_names::<Proto>(t.unwrap_or("auto")),
        (_, None) => Ok(Vec::new()),
        (b, Some(t)) => Err(Error::usage(format!(
            "--proto {}: protocols are NCCL's; drop --proto or use --backend nccl (this is --backend {b})",
            t.trim()
        ))),
    }
}
