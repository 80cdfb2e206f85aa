//! A multi-host launch played on one machine: each rank a `collbench` process started with the
//! variables torchrun would give it, on a node named by `COLLBENCH_NODE_NAME`.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{command, Run, Spawned};

/// The job's shared secret, as `COLLBENCH_TOKEN`.
pub const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// A port nobody listens on right now, for rank 0's store.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// One rank of a torchrun-style launch of `world` ranks, on node `node`.
pub fn torchrun_rank(rank: usize, world: usize, port: u16, node: &str, args: &[&str]) -> Spawned {
    torchrun_rank_with(rank, world, port, node, args, &[])
}

/// [`torchrun_rank`] with extra environment variables.
pub fn torchrun_rank_with(
    rank: usize,
    world: usize,
    port: u16,
    node: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Spawned {
    let mut cmd = command(args);
    cmd.envs(env.iter().copied());
    cmd.env("RANK", rank.to_string())
        .env("WORLD_SIZE", world.to_string())
        .env("LOCAL_RANK", "0")
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .env("COLLBENCH_TOKEN", TOKEN)
        .env("COLLBENCH_NODE_NAME", node);
    Spawned::start(cmd)
}

/// Waits for every rank, rank 0 first in the result.
pub fn finish_all(ranks: Vec<Spawned>, limit: Duration) -> Vec<Run> {
    let since = Instant::now();
    ranks.into_iter().map(|r| r.finish(since, limit)).collect()
}

/// `collbench sweep --no-progress --out out` and `extra`.
pub fn sweep_args<'a>(out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
    a.extend_from_slice(extra);
    a
}
