//! What every NCCL rank sets up before it measures: every rank's node and GPU gathered, rank 0's
//! results folder and meta.json, the communicators' configuration, and each communicator made
//! from a unique id that rank 0 shares through the store.

use std::sync::Arc;

use crate::backend::nccl::comm::Communicator;
use crate::backend::nccl::config;
use crate::backend::nccl::loader::{Nccl, UniqueId, Version};
use crate::backend::nccl::memory;
use crate::backend::nccl::sys::ncclConfig_t;
use crate::backend::nccl::tuning;
use crate::error::{Error, Result};
use crate::launch::store::StoreClient;
use crate::meta::Meta;
use crate::model::call::BackendKind;
use crate::model::comm_setup::CommSetup;
use crate::model::plan::SweepOptions;
use crate::model::topology::Topology;
use crate::sweep::request::SweepRequest;

/// Rank 0's meta.json: the library, the communicators' configurations, every rank's node and
/// GPU; and the ranks' topology.
pub(super) fn run_meta(
    req: &SweepRequest,
    opts: &SweepOptions,
    nccl: &Nccl,
    (hosts, gpus): (Vec<String>, Vec<String>),
) -> Result<(Meta, Topology)> {
    let version = nccl.version().map_err(|e| Error::Rank(e.to_string()))?;
    let topo = Topology::from_hosts(&hosts);
    let mut meta = Meta::new(
        req.command_line.clone(),
        BackendKind::Nccl.name(),
        BackendKind::Nccl.name(),
        gpus.len(),
        topo.nodes(),
        options_json(opts, req, nccl, version),
    );
    meta.library = Some(format!("NCCL {version}"));
    meta.gpus = gpus;
    meta.hosts = topo.hosts.clone();
    meta.rank_nodes = topo.node_of.clone();
    Ok((meta, topo))
}

/// The resolved options, with what NCCL was asked for beside them.
pub(super) fn options_json(
    opts: &SweepOptions,
    req: &SweepRequest,
    nccl: &Nccl,
    version: Version,
) -> serde_json::Value {
    let mut v = serde_json::to_value(opts).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        map.insert("protos".into(), serde_json::json!(req.protos));
        map.insert("cuda_graph".into(), req.cuda_graph.into());
        if req.cuda_graph {
            map.insert("graph_launches".into(), req.graph_launches.into());
        }
        let groups = if nccl.has_split() {
            "ncclCommSplit"
        } else {
            "ncclCommInitRank"
        };
        map.insert("nccl_groups".into(), groups.into());
        map.insert("buffers".into(), memory::allocator_name(nccl).into());
        map.insert("agg_iters".into(), req.opts.loop_timing.agg.into());
        let setups = req.comm.setups();
        map.insert("comm_setups".into(), serde_json::json!(setups));
        if nccl.comm_init_rank_config.is_some() {
            let configs: Vec<_> = setups
                .iter()
                .map(|s| config::describe(&config::comm_config(version, s)))
                .collect();
            map.insert("nccl_configs".into(), configs.into());
        }
    }
    v
}

/// The unique id under `key`: rank 0 makes it (`ncclGetUniqueId`) and puts it in the store,
/// the others take it from there.
pub(super) fn share_id(
    nccl: &Nccl,
    store: &mut StoreClient,
    rank: usize,
    key: &str,
) -> Result<UniqueId> {
    if rank != 0 {
        return tuning::decode_id(key, &store.get(key)?);
    }
    let id = nccl.unique_id().map_err(|e| Error::Rank(e.to_string()))?;
    store.set(key, &tuning::encode_id(&id))?;
    Ok(id)
}

/// Checks every combination of `--register`, `--cta-policy` and `--ctas` against the library
/// and the NCCL variables that would override one, before any communicator exists: a usage
/// error naming the flag. Returns the library's version.
pub(super) fn check_comm_setups(nccl: &Nccl, setups: &[CommSetup]) -> Result<Version> {
    let version = nccl.version().map_err(|e| Error::Rank(e.to_string()))?;
    let offers = config::Offers {
        version,
        config: nccl.comm_init_rank_config.is_some(),
        local: nccl.comm_register.is_some(),
        // Symmetric windows need ncclMemAlloc's buffers too.
        symmetric: nccl.window_register.is_some() && memory::allocator_name(nccl) == "ncclMemAlloc",
    };
    for s in setups {
        config::check_setup(s, offers, |var| std::env::var(var).ok()).map_err(Error::Usage)?;
    }
    Ok(version)
}

/// `ncclCommInitRank` (or `ncclCommInitRankConfig`) as `rank` of `n`; a failure names the rank (across nodes each rank
/// reports for itself).
pub(super) fn join(
    nccl: &Arc<Nccl>,
    n: usize,
    id: &UniqueId,
    rank: usize,
    config: &ncclConfig_t,
) -> Result<Communicator> {
    Communicator::init(Arc::clone(nccl), n, id, rank, Some(config))
        .map_err(|e| Error::Rank(format!("rank {rank}: {e}")))
}
