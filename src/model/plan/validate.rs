//! Checking the options before a plan is expanded: what the parser cannot see (world sizes
//! against ranks, reductions and algorithms a backend lacks, a root outside its group, a split
//! where no launcher watches its groups).

use crate::error::{Error, Result};
use crate::model::call::BackendKind;
use crate::model::topology::WorldShape;

use super::{Roots, SweepOptions};

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

    /// `--split` runs where one launcher starts every group (host ranks on this host, or an
    /// MPI world), `--with-compute` on host ranks on this host; one of them at a time.
    fn validate_beside(&self, backend: BackendKind) -> Result<()> {
        let local = backend == BackendKind::Host && self.shapes.is_empty() && self.pairs.is_empty();
        let runs = match self.split {
            Some(_) => local || backend == BackendKind::Mpi,
            None => local,
        };
        let flag = match (self.split, self.with_compute) {
            (Some(rule), Some(kind)) => {
                return Err(Error::usage(format!(
                    "--with-compute {kind} and --split {rule} are measured one at a time; drop one"
                )))
            }
            (Some(rule), None) => format!("--split {rule}"),
            (None, Some(kind)) => format!("--with-compute {kind}"),
            (None, None) => return Ok(()),
        };
        if runs {
            return Ok(());
        }
        let (backends, unset) = match self.split {
            Some(_) => (
                "the host backend in a launch of one host (collbench sweep --ranks N) \
                 and the mpi backend",
                "unset it (or NCCL_TESTS_SPLIT)",
            ),
            None => (
                "the host backend in a launch of one host (collbench sweep --ranks N)",
                "drop it",
            ),
        };
        Err(Error::usage(format!(
            "{flag} runs on {backends} so far; {unset} for this run"
        )))
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
