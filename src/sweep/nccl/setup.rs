//! What every NCCL rank sets up before it measures: every rank's node and GPU gathered, rank 0's
//! results folder and meta.json, the communicators' configuration, and each communicator made
//! from a unique id that rank 0 shares through the store.

use std::sync::Arc;

use crate::backend::nccl::comm::Communicator;
use crate::backend::nccl::config;
use crate::backend::nccl::loader::{Nccl, UniqueId};
use crate::backend::nccl::sys::ncclConfig_t;
use crate::backend::nccl::tuning;
use crate::error::{Error, Result};
use crate::launch::store::StoreClient;
use crate::meta::Meta;
use crate::model::plan::SweepOptions;
use crate::model::topology::Topology;
use crate::report::run_dir::RunDir;
use crate::sweep::run::SweepRequest;

/// Rank 0's results folder, its meta.json naming the library, the communicators'
/// configuration, every rank's node and GPU.
pub(super) fn open_run(
    req: &SweepRequest,
    (opts, config): (&SweepOptions, &ncclConfig_t),
    nccl: &Nccl,
    dir: &std::path::Path,
    (hosts, gpus): (Vec<String>, Vec<String>),
) -> Result<(RunDir, Topology)> {
    let version = nccl.version().map_err(|e| Error::Rank(e.to_string()))?;
    let topo = Topology::from_hosts(&hosts);
    let mut meta = Meta::new(
        req.command_line.clone(),
        "nccl",
        "nccl",
        gpus.len(),
        topo.nodes(),
        options_json(opts, req, nccl, config),
    );
    meta.library = Some(format!("NCCL {version}"));
    meta.gpus = gpus;
    meta.hosts = topo.hosts.clone();
    meta.rank_nodes = topo.node_of.clone();
    Ok((RunDir::create(dir, &meta)?, topo))
}

/// The resolved options, with what NCCL was asked for beside them.
pub(super) fn options_json(
    opts: &SweepOptions,
    req: &SweepRequest,
    nccl: &Nccl,
    config: &ncclConfig_t,
) -> serde_json::Value {
    let mut v = serde_json::to_value(opts).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        map.insert("protos".into(), serde_json::json!(req.protos));
        map.insert("cuda_graph".into(), req.cuda_graph.into());
        let groups = if nccl.has_split() {
            "ncclCommSplit"
        } else {
            "ncclCommInitRank"
        };
        map.insert("nccl_groups".into(), groups.into());
        map.insert("register".into(), req.register.name().into());
        if nccl.comm_init_rank_config.is_some() {
            map.insert("nccl_config".into(), config::describe(config));
        }
    }
    v
}

/// Every rank's node name and GPU name (`gpu`), in rank order.
pub(super) fn gather_ranks(
    store: &mut StoreClient,
    gpu: &str,
) -> Result<(Vec<String>, Vec<String>)> {
    let host = std::env::var(crate::launch::rendezvous::NODE_NAME_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| crate::meta::HostInfo::detect().hostname);
    let mine = format!("{host}\n{gpu}");
    let all = store.all_gather("nccl-ranks", mine.as_bytes())?;
    Ok(all
        .iter()
        .map(|b| {
            let text = String::from_utf8_lossy(b);
            let (h, g) = text.split_once('\n').unwrap_or((&text, "unknown"));
            (h.to_string(), g.to_string())
        })
        .unzip())
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

/// The configuration of every communicator of this run: nccl-tests' own, with `--cta-policy`;
/// a policy the library predates is a usage error.
pub(super) fn comm_config_of(nccl: &Nccl, req: &SweepRequest) -> Result<ncclConfig_t> {
    let version = nccl.version().map_err(|e| Error::Rank(e.to_string()))?;
    config::check_policy(req.cta_policy, version).map_err(Error::Usage)?;
    if req.register == crate::model::call::Register::Local && nccl.comm_register.is_none() {
        return Err(Error::Usage(format!(
            "--register local needs ncclCommRegister (NCCL 2.19+); this library is NCCL \
             {version}: drop --register or point COLLBENCH_NCCL_LIB at a newer libnccl.so.2"
        )));
    }
    Ok(config::comm_config(version, req.cta_policy))
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
