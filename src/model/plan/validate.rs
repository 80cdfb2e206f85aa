//! Checking the options before a plan is expanded: what the parser cannot see (world sizes
//! against ranks, reductions and algorithms a backend lacks, a root outside its group, a split
//! where no launcher watches its groups).

use crate::error::{Error, Result};
use crate::model::call::BackendKind;
use crate::model::concurrent::Concurrent;
use crate::model::topology::WorldShape;

use super::{ComputeKind, Roots, SweepOptions};

/// A compute load runs where its hardware is: the host's kernels beside host ranks, the GEMM
/// beside NCCL ranks on their GPUs.
fn validate_load(backend: BackendKind, kind: ComputeKind) -> Result<()> {
    match (backend, kind) {
        (BackendKind::Nccl, ComputeKind::Gemm) => Ok(()),
        (BackendKind::Nccl, _) => Err(Error::usage(format!(
            "--with-compute {kind} is a host load (a CPU thread beside each rank); on the nccl \
             backend use --with-compute gemm (a cuBLAS GEMM beside each rank's calls)"
        ))),
        (_, ComputeKind::Gemm) => Err(Error::usage(format!(
            "--with-compute gemm runs on the nccl backend (a cuBLAS GEMM on each rank's GPU); \
             on the {backend} backend use memory or cache"
        ))),
        _ => Ok(()),
    }
}

impl SweepOptions {
    /// Checks what the parser cannot: world sizes against ranks, op/algo combinations.
    pub fn validate(&self) -> Result<()> {
        self.validate_for(BackendKind::Host)
    }

    /// [`SweepOptions::validate`] against the algorithms of `backend`.
    pub fn validate_for(&self, backend: BackendKind) -> Result<()> {
        if self.ranks == 0 {
            return Err(Error::usage("--ranks must be at least 1"));
        }
        if let Some(&w) = self.world_sizes.iter().find(|&&w| w == 0 || w > self.ranks) {
            return Err(Error::usage(format!(
                "world size {w} is not between 1 and --ranks {}; raise --ranks or drop it from --world-sizes",
                self.ranks
            )));
        }
        if self.iters == Some(0) {
            return Err(Error::usage("--iters must be at least 1"));
        }
        crate::model::limits::check_counts(self.iters, self.warmup)?;
        self.validate_beside(backend)?;
        self.validate_root()?;
        if let Some(r) = self.redops.iter().find(|r| !backend.redops().contains(r)) {
            return Err(Error::usage(format!(
                "--redop {r}: the {backend} backend has no such reduction"
            )));
        }
        let any = self
            .ops
            .iter()
            .any(|op| self.algos.iter().any(|a| backend.algos(*op).contains(a)));
        if !any {
            return Err(Error::usage(format!(
                "no requested op has a requested algorithm: {}",
                self.combinations_hint(backend)
            )));
        }
        Ok(())
    }

    /// `--split` runs where one launcher starts every group (host ranks on this host, an MPI
    /// world, NCCL ranks), `--with-compute` where its load runs (the host's kernels beside host
    /// ranks on this host, the GEMM beside NCCL ranks); one of them at a time.
    fn validate_beside(&self, backend: BackendKind) -> Result<()> {
        if let Some(c) = &self.concurrent {
            return self.validate_concurrent(backend, c);
        }
        if let Some(kind) = self.with_compute {
            validate_load(backend, kind)?;
        }
        let one_host = "the host backend in a launch of one host (collbench sweep --ranks N)";
        let local = backend == BackendKind::Host && self.shapes.is_empty() && self.pairs.is_empty();
        let nccl = backend == BackendKind::Nccl && self.pairs.is_empty();
        let (flag, runs, backends, unset) = match (self.split, self.with_compute) {
            (None, None) => return Ok(()),
            (Some(rule), Some(kind)) => {
                return Err(Error::usage(format!(
                    "--with-compute {kind} and --split {rule} are measured one at a time; drop one"
                )))
            }
            (Some(rule), None) => (
                format!("--split {rule}"),
                local || nccl || backend == BackendKind::Mpi,
                format!("{one_host}, the mpi backend and the nccl backend without --pairs"),
                "unset it (or NCCL_TESTS_SPLIT)",
            ),
            (None, Some(ComputeKind::Gemm)) => (
                "--with-compute gemm".into(),
                nccl,
                "the nccl backend without --pairs".into(),
                "drop one",
            ),
            (None, Some(kind)) => (
                format!("--with-compute {kind}"),
                local,
                one_host.into(),
                "drop it",
            ),
        };
        if runs {
            return Ok(());
        }
        Err(Error::usage(format!(
            "{flag} runs on {backends} so far; {unset} for this run"
        )))
    }

    /// `--concurrent` runs on the MPI backend and the host backend in a launch of one host,
    /// alone of the things beside calls, with one root that every rooted entry's groups hold.
    fn validate_concurrent(&self, backend: BackendKind, c: &Concurrent) -> Result<()> {
        let local = backend == BackendKind::Host && self.shapes.is_empty() && self.pairs.is_empty();
        if !(local || backend == BackendKind::Mpi) {
            return Err(Error::usage(format!(
                "--concurrent runs on the mpi backend and the host backend in a launch of one \
                 host so far (a {backend} rank in two groups at once needs a communicator for \
                 each); run it with `collbench sweep --ranks N` or with mpirun and --backend mpi"
            )));
        }
        if let Some(other) = (self.split.map(|r| format!("--split {r}")))
            .or(self.with_compute.map(|k| format!("--with-compute {k}")))
        {
            return Err(Error::usage(format!(
                "--concurrent and {other} are measured one at a time; drop one \
                 (or unset NCCL_TESTS_SPLIT)"
            )));
        }
        let Some(op) = c.0.iter().map(|e| e.op).find(|op| op.rooted()) else {
            return Ok(());
        };
        let Roots::Rank(root) = self.root else {
            return Err(Error::usage(format!(
                "--root all and --concurrent: {op} runs at once with one root; give --root N"
            )));
        };
        for &world in &self.world_sizes {
            let Ok(at) = c.at(world) else { continue };
            let small = (at.entries.iter())
                .filter(|(op, _)| op.rooted())
                .map(|(op, g)| (g.size(), *op))
                .min();
            if let Some((size, op)) = small.filter(|(size, _)| root >= *size) {
                return Err(Error::usage(format!(
                    "--root {root} is not a rank of the {size}-rank groups {op} runs in at \
                     world {world}; give a root below {size}"
                )));
            }
        }
        Ok(())
    }

    /// A fixed `--root` must be a rank of every group a rooted op is measured in.
    fn validate_root(&self) -> Result<()> {
        let Roots::Rank(root) = self.root else {
            return Ok(());
        };
        let Some(op) = self.ops.iter().find(|op| op.rooted()) else {
            return Ok(());
        };
        let group_world = |g: WorldShape| self.split_of(g).map_or(g.world(), |(s, _)| s.world());
        let smallest = self.groups().iter().map(|&(g, _)| group_world(g)).min();
        match smallest {
            Some(world) if root >= world => Err(Error::usage(format!(
                "--root {root} is not a rank of the {world}-rank group {op} is measured in; \
                 give a root below {world}, or --root all for every rank of each group"
            ))),
            _ => Ok(()),
        }
    }

    fn combinations_hint(&self, backend: BackendKind) -> String {
        let parts: Vec<String> = self.ops.iter().map(|op| backend.offer(*op)).collect();
        parts.join("; ")
    }
}
