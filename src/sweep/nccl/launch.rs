//! How NCCL rank processes come to be, one per GPU. On one node collbench starts them itself:
//! the launcher serves the rendezvous store on loopback, starts `--ranks N` (default: every
//! visible GPU) copies of the same command with the rank's identity in the environment, relays
//! their exit, and stops them all when one fails. Across nodes mpirun, srun or torchrun start
//! them (see [`crate::launch::env`]) and rank 0 serves the store. Either way rank r drives GPU
//! `local rank` and rank 0 writes the results.

use std::path::PathBuf;
use std::time::Duration;

use super::rank::{run_rank, RankContext};
use super::supervise::{close_left_running, Ranks};
use crate::error::{Error, Result};
use crate::launch::env::{parse_token, Bootstrap, STORE_ADDR_ENV, TOKEN_ENV};
use crate::launch::store::{random_token, StoreClient, StoreServer};
use crate::model::call::BackendKind;
use crate::report::run_dir::run_dir_or_default;
use crate::sweep::lead::Outcome;
use crate::sweep::request::SweepRequest;

/// Set by the launcher in each rank it starts: "rank/world".
pub const RANK_ENV: &str = "COLLBENCH_NCCL_RANK";
/// Set by the launcher in each rank it starts: the results folder rank 0 writes.
pub const OUT_ENV: &str = "COLLBENCH_NCCL_OUT";

/// How this process took part.
pub enum NcclRun {
    /// Rank 0: it wrote the results.
    Lead(Outcome),
    /// Another rank: rank 0 reports.
    Follower,
    /// The local launcher: its ranks reported; exit with this code.
    Launcher(u8),
}

/// A rank started by collbench's own launcher: (rank, world), from [`RANK_ENV`].
pub fn parse_rank_env(text: &str) -> Result<(usize, usize)> {
    let bad = || {
        Error::usage(format!(
            "{RANK_ENV}='{text}' is not rank/world; it is set by collbench for the ranks it starts, unset it"
        ))
    };
    let (r, w) = text.trim().split_once('/').ok_or_else(bad)?;
    let (r, w): (usize, usize) = (r.parse().map_err(|_| bad())?, w.parse().map_err(|_| bad())?);
    if r >= w {
        return Err(bad());
    }
    Ok((r, w))
}

/// Runs this process's part: a started rank, a rank of a multi-node launch, or the launcher.
pub fn run_nccl(req: &SweepRequest, devices: usize) -> Result<NcclRun> {
    let store_timeout = req.timeout.saturating_mul(2) + Duration::from_secs(60);
    if let Ok(text) = std::env::var(RANK_ENV) {
        let (rank, world) = parse_rank_env(&text)?;
        let addr = std::env::var(STORE_ADDR_ENV).unwrap_or_default();
        let token = parse_token(&std::env::var(TOKEN_ENV).unwrap_or_default())?;
        let out = PathBuf::from(std::env::var_os(OUT_ENV).unwrap_or_default());
        let store = StoreClient::connect(&addr, &token, rank, store_timeout)?;
        let ctx = RankContext::new(rank, world, rank, store, out);
        return Ok(as_run(run_rank(req, ctx)?));
    }
    match crate::launch::env::detect_process()? {
        Some(boot) if boot.world > 1 => multi_node(req, &boot, devices, store_timeout),
        _ => launch_local(req, devices),
    }
}

fn as_run(outcome: Option<Outcome>) -> NcclRun {
    match outcome {
        Some(o) => NcclRun::Lead(o),
        None => NcclRun::Follower,
    }
}

fn default_out(req: &SweepRequest) -> Result<PathBuf> {
    run_dir_or_default(req.out.as_deref(), &req.opts.ops, BackendKind::Nccl.name())
}

/// The GPU of a rank with `local` rank on its node, checked against the node's GPUs.
pub fn device_of(rank: usize, local: Option<usize>, devices: usize) -> Result<usize> {
    let local = local.unwrap_or(rank);
    if local >= devices {
        return Err(Error::usage(format!(
            "rank {rank} is local rank {local} on its node, which has {devices} GPU(s); start at \
             most one rank per GPU on each node (check CUDA_VISIBLE_DEVICES)"
        )));
    }
    Ok(local)
}

/// A rank started by mpirun, srun or torchrun.
fn multi_node(
    req: &SweepRequest,
    boot: &Bootstrap,
    devices: usize,
    timeout: Duration,
) -> Result<NcclRun> {
    if req.ranks_given && req.opts.ranks != boot.world {
        return Err(Error::usage(format!(
            "--ranks {} but {} started {} ranks; drop --ranks when a launcher starts collbench",
            req.opts.ranks,
            boot.launcher.name(),
            boot.world
        )));
    }
    let device = device_of(boot.rank, boot.local_rank, devices)?;
    let token = boot.token.clone().ok_or_else(|| {
        let e = crate::launch::rendezvous::missing_token(boot);
        crate::sweep::cluster::said_once(e, boot)
    })?;
    let addr = boot.store_addr().ok_or_else(|| {
        Error::usage(format!(
            "{}: no address for rank 0's store; set MASTER_ADDR and MASTER_PORT, or {STORE_ADDR_ENV}=host:port",
            boot.launcher.name()
        ))
    })?;
    let server = match (boot.rank, crate::launch::rendezvous::store_bind(boot)?) {
        (0, Some(bind)) => Some(StoreServer::bind(&bind, &token, boot.world, timeout)?),
        _ => None,
    };
    let mut store = StoreClient::connect(&addr, &token, boot.rank, timeout)?;
    // Every rank writes into the folder rank 0 names (and only rank 0 creates one).
    let out = match boot.rank {
        0 => default_out(req)?,
        _ => PathBuf::new(),
    };
    let outs = store.all_gather("nccl-out", out.to_string_lossy().as_bytes())?;
    let out = PathBuf::from(String::from_utf8_lossy(&outs[0]).into_owned());
    let mut ctx = RankContext::new(boot.rank, boot.world, device, store, out);
    // Rank 0 serves the store until its run ends, and reads the others' failure reports in it.
    ctx.server = server;
    Ok(as_run(run_rank(req, ctx)?))
}

/// Starts one rank per GPU on this node and waits for them.
fn launch_local(req: &SweepRequest, devices: usize) -> Result<NcclRun> {
    let n = if req.ranks_given {
        req.opts.ranks
    } else {
        devices
    };
    if n > devices {
        return Err(Error::usage(format!(
            "--ranks {n} but this node has {devices} GPU(s); the nccl backend runs one rank per \
             GPU: lower --ranks (or check CUDA_VISIBLE_DEVICES)"
        )));
    }
    // Bad options are refused here once, not by every rank.
    super::plan::check_plan(req, n)?;
    let token = random_token();
    let server = StoreServer::bind("127.0.0.1:0", &token.to_be_bytes(), n, req.timeout * 2)?;
    let addr = server.local_addr().to_string();
    let out = default_out(req)?;
    let env = |r: usize| {
        vec![
            (RANK_ENV, format!("{r}/{n}")),
            (STORE_ADDR_ENV, addr.clone()),
            (TOKEN_ENV, format!("{token:016x}")),
            (OUT_ENV, out.to_string_lossy().into_owned()),
        ]
    };
    let mut ranks = Ranks::spawn(n, env)?;
    let result = ranks.supervise();
    ranks.kill_all();
    drop(server);
    close_left_running(&out, &result);
    result.map(NcclRun::Launcher)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_identity_is_rank_slash_world() {
        assert_eq!(parse_rank_env("3/8").unwrap(), (3, 8));
        assert_eq!(parse_rank_env(" 0/1 ").unwrap(), (0, 1));
        for bad in ["8/8", "x/2", "1", "", "1/-2"] {
            let e = parse_rank_env(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("'{bad}'")) && e.contains("unset it"),
                "{e}"
            );
        }
    }

    #[test]
    fn local_rank_picks_the_gpu_and_too_many_ranks_are_refused() {
        assert_eq!(device_of(9, Some(1), 8).unwrap(), 1);
        assert_eq!(device_of(3, None, 8).unwrap(), 3);
        let e = device_of(8, Some(8), 8).unwrap_err().to_string();
        assert!(e.contains("local rank 8") && e.contains("8 GPU(s)"), "{e}");
    }
}
