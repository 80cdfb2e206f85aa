//! `COLLBENCH_NCCL_BOOTSTRAP_ONLY=1`: a rehearsal of everything an NCCL sweep does before its
//! first GPU call, for a machine without a GPU (or to check that ranks on several nodes find
//! each other before a long sweep). The ranks start as for a sweep (the local launcher,
//! mpirun, srun or torchrun), rank 0 writes the results folder, makes the unique id and shares
//! it through the store, every rank checks that it holds rank 0's id byte for byte, and every
//! rank calls `ncclCommInitRank` for the world. No GPU is opened by collbench: without one
//! NCCL fails there with its own last error, which ends the run in one line naming the rank,
//! with the results folder closed as failed; with one (world 1, or ranks on distinct nodes)
//! the communicator is made, destroyed, and the run ends with no points.

use std::sync::Arc;

use super::context::gather_ranks;
use super::context::RankContext;
use super::plan::check_plan;
use super::setup::{check_comm_setups, join, run_meta, share_id};
use crate::backend::nccl::config::comm_config;
use crate::backend::nccl::loader::{Nccl, UniqueId};
use crate::backend::nccl::sys::ncclConfig_t;
use crate::error::{Error, Result};
use crate::launch::store::StoreClient;
use crate::report::run_dir::RunDir;
use crate::sweep::lead::{close_run, Outcome};
use crate::sweep::request::SweepRequest;

/// The variable that asks for the rehearsal.
pub const BOOTSTRAP_ONLY_ENV: &str = "COLLBENCH_NCCL_BOOTSTRAP_ONLY";

/// What meta.json says of each rank's GPU in a rehearsal.
pub const NO_GPU: &str = "none (bootstrap only)";

/// Whether this run is a rehearsal of the bootstrap.
pub fn only() -> bool {
    std::env::var(BOOTSTRAP_ONLY_ENV).is_ok_and(|v| v.trim() == "1")
}

/// This rank's part of the rehearsal; rank 0 returns the (empty) outcome.
pub fn rehearse(
    req: &SweepRequest,
    mut ctx: RankContext,
    nccl: Arc<Nccl>,
) -> Result<Option<Outcome>> {
    let (opts, _, stages) = check_plan(req, ctx.world)?;
    let version = check_comm_setups(&nccl, &req.comm.setups())?;
    // The first stage's communicators are the first a sweep makes.
    let first = stages.first().map(|s| s.setup).unwrap_or_default();
    let config = comm_config(version, &first);
    let ranks = gather_ranks(&mut ctx, NO_GPU)?;
    let lead = match ctx.rank {
        0 => Some(RunDir::create(
            &ctx.out,
            &run_meta(req, &opts, &nccl, ranks)?.0,
        )?),
        _ => None,
    };
    let result = bootstrap(&nccl, &mut ctx, &config).map_err(|e| ctx.blame(e));
    match lead {
        Some(out) => close_run(out, ctx.out.clone(), result.map(|()| 0)).map(Some),
        None => result.map(|()| None),
    }
}

/// The id shared and checked, the world communicator made and destroyed.
fn bootstrap(nccl: &Arc<Nccl>, ctx: &mut RankContext, config: &ncclConfig_t) -> Result<()> {
    let id = share_id(nccl, &mut ctx.store, ctx.rank, "nccl-id-0")?;
    check_same_id(&mut ctx.store, &id)?;
    let comm = join(nccl, ctx.world, &id, ctx.rank, config)?;
    comm.destroy()
        .map_err(|e| Error::Rank(format!("rank {}: {e}", ctx.rank)))
}

/// Every rank's copy of the id, gathered: each must equal rank 0's, byte for byte.
fn check_same_id(store: &mut StoreClient, id: &UniqueId) -> Result<()> {
    let all = store.all_gather("nccl-id-check", &id.0)?;
    match first_difference(&all) {
        Some((rank, byte)) => Err(Error::Rank(format!(
            "rank {rank} holds a unique id that differs from rank 0's at byte {byte}: the \
             store carried it wrongly"
        ))),
        None => Ok(()),
    }
}

/// The first (rank, byte) where a rank's id differs from rank 0's.
pub fn first_difference(ids: &[Vec<u8>]) -> Option<(usize, usize)> {
    let first = ids.first()?;
    ids.iter().enumerate().skip(1).find_map(|(r, id)| {
        let byte = (0..first.len().max(id.len())).find(|&i| first.get(i) != id.get(i))?;
        Some((r, byte))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_whose_id_differs_is_named_with_the_byte() {
        let id = vec![7u8; 128];
        let mut other = id.clone();
        other[93] ^= 1;
        assert_eq!(first_difference(&[id.clone(), id.clone()]), None);
        assert_eq!(
            first_difference(&[id.clone(), id.clone(), other]),
            Some((2, 93))
        );
        assert_eq!(
            first_difference(&[id.clone(), id[..64].to_vec()]),
            Some((1, 64))
        );
        assert_eq!(first_difference(&[]), None);
    }
}
