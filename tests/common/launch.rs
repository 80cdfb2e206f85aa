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

/// `args` on one torchrun-started rank per node of `nodes` (rank r on `nodes[r]`), waited for.
pub fn one_rank_per_node(nodes: &[&str], args: &[&str], limit: Duration) -> Vec<Run> {
    let port = free_port();
    let ranks = (nodes.iter().enumerate())
        .map(|(r, node)| torchrun_rank(r, nodes.len(), port, node, args))
        .collect();
    finish_all(ranks, limit)
}

/// Every rank exited 0 (the assertion names the first that did not, with its stderr).
pub fn assert_all_succeeded(runs: &[Run]) {
    for (r, run) in runs.iter().enumerate() {
        assert_eq!(run.code(), 0, "rank {r}: {}", run.stderr);
    }
}

/// `collbench sweep --no-progress --out out` and `extra`.
pub fn sweep_args<'a>(out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sweep", "--no-progress", "--out", out.to_str().unwrap()];
    a.extend_from_slice(extra);
    a
}
