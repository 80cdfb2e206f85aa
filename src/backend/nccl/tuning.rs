//! What the sweep asks of NCCL beyond the call itself, as plain data: the `NCCL_ALGO` and
//! `NCCL_PROTO` values of each (algorithm, protocol) combination, the order in which points are
//! measured so that each combination's communicators are created once, the colour of each rank
//! when the world communicator is split, and the unique id as it travels through the store.
//!
//! NCCL reads `NCCL_ALGO` and `NCCL_PROTO` while it tunes a new communicator (init or split),
//! matching names case-insensitively against its own lists (`Tree, Ring, CollNetDirect,
//! CollNetChain, NVLS, NVLSTree, PAT` and `LL, LL128, Simple` in NCCL 2.18-2.23); a name it does
//! not know enables nothing. So every combination gets communicators of its own, created after
//! the variables are set.
//!
//! Both variables steer collectives only: NCCL parses them into per-collective tables of its
//! cost model (`graph/tuning.cc`), while a point-to-point call runs Simple (before NCCL 2.14),
//! or since 2.14 LL up to `NCCL_P2P_LL_THRESHOLD` bytes per channel where the connection has
//! LL buffers and Simple above (`enqueue.cc`). The point-to-point ops (AllToAll, SendRecv) have
//! `auto` as their one algorithm, so `NCCL_ALGO` is never set for them, and are measured once,
//! in the `auto` protocol's stage, instead of once per forced protocol that would not apply.

use std::os::raw::c_int;

use super::loader::UniqueId;
use super::sys;
use crate::collective::{Algo, Op, Proto};
use crate::error::{Error, Result};
use crate::model::comm_setup::CommSetup;
use crate::model::plan::Point;

/// The environment variable NCCL reads for the algorithms it may use.
pub const ALGO_ENV: &str = "NCCL_ALGO";
/// The environment variable NCCL reads for the protocols it may use.
pub const PROTO_ENV: &str = "NCCL_PROTO";

/// `NCCL_ALGO` for `algo`; `None` for `auto` (NCCL's own choice).
pub fn algo_value(algo: Algo) -> Option<&'static str> {
    match algo {
        Algo::Ring => Some("Ring"),
        Algo::Tree => Some("Tree"),
        // NVLSTree is NVLS within a node and a tree across nodes: NCCL picks the one that fits.
        Algo::Nvls => Some("NVLS,NVLSTree"),
        Algo::CollNet => Some("CollNetDirect,CollNetChain"),
        _ => None,
    }
}

/// `NCCL_PROTO` for `proto`; `None` for `auto`.
pub fn proto_value(proto: Proto) -> Option<&'static str> {
    match proto {
        Proto::Ll => Some("LL"),
        Proto::Ll128 => Some("LL128"),
        Proto::Simple => Some("Simple"),
        Proto::Auto => None,
    }
}

/// What to say when NCCL ran another algorithm or protocol than the stage forced (`NCCL_ALGO`
/// names NCCL ignored, or a forced one this system lacks that NCCL replaced), `None` when it
/// ran what was asked or nothing was forced.
pub fn ignored(algo: Algo, proto: Proto, ran: &super::profiler::Ran) -> Option<String> {
    let honours = |forced: Option<&str>, name: &str| {
        forced.map_or(true, |v| v.split(',').any(|n| n.eq_ignore_ascii_case(name)))
    };
    let (a, p) = (algo_value(algo), proto_value(proto));
    let (ran_a, ran_p) = (ran.algo_name(), ran.proto_name());
    match (honours(a, ran_a), honours(p, ran_p)) {
        (true, true) => None,
        _ => Some(format!(
            "NCCL ran {ran_a}/{ran_p} where {ALGO_ENV}={} {PROTO_ENV}={} was set: the forced \
             choice was not honoured, so this point is NCCL's own choice",
            a.unwrap_or("(auto)"),
            p.unwrap_or("(auto)")
        )),
    }
}

/// What the two variables must hold for one combination: the forced value, or for `auto` what
/// the user's own environment held when collbench started (`None`: unset).
pub fn env_for(
    algo: Algo,
    proto: Proto,
    user: &(Option<String>, Option<String>),
) -> [(&'static str, Option<String>); 2] {
    let pick = |forced: Option<&str>, own: &Option<String>| {
        forced.map(str::to_string).or_else(|| own.clone())
    };
    [
        (ALGO_ENV, pick(algo_value(algo), &user.0)),
        (PROTO_ENV, pick(proto_value(proto), &user.1)),
    ]
}

/// The user's own `NCCL_ALGO` and `NCCL_PROTO`, read once before collbench sets them.
pub fn user_env() -> (Option<String>, Option<String>) {
    (std::env::var(ALGO_ENV).ok(), std::env::var(PROTO_ENV).ok())
}

/// Sets the variables for one combination in this process, before its communicators exist;
/// a variable that already holds its value is not touched (the first combination's are set
/// before any other thread exists). Called only while this process runs no other thread of
/// ours and no communicator: NCCL reads the variables inside communicator creation, and its
/// per-communicator threads end with the communicator.
pub fn apply_env(vars: &[(&'static str, Option<String>); 2]) {
    for (k, v) in vars {
        if std::env::var(k).ok() == *v {
            continue;
        }
        match v {
            Some(v) => std::env::set_var(k, v),
            None => std::env::remove_var(k),
        }
    }
}

/// The points of one (communicator setup, algorithm, protocol) combination, grouped by world
/// size (largest first, as planned), each group in plan order.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// Registration, CTA policy and bounds of the stage's communicators.
    pub setup: CommSetup,
    pub algo: Algo,
    pub proto: Proto,
    /// (world size, its points).
    pub groups: Vec<(usize, Vec<Point>)>,
}

impl Stage {
    /// The number of points.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|(_, p)| p.len()).sum()
    }

    /// Whether the stage has no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether points of `op` are measured in the stage of protocol `proto`: every protocol for a
/// collective, `auto` only for a point-to-point op (NCCL_PROTO does not apply to it).
pub fn measured_with(op: Op, proto: Proto) -> bool {
    !op.nccl_point_to_point() || proto == Proto::Auto
}

/// What the plan's notes say when protocols other than `auto` are asked for with
/// point-to-point ops among `ops`: measured under `auto` only, or not at all where `auto` is not
/// among `protos`. `None` when there is nothing to say.
pub fn protocol_note(ops: &[Op], protos: &[Proto]) -> Option<String> {
    let mut p2p: Vec<&str> = Vec::new();
    for op in ops.iter().filter(|op| op.nccl_point_to_point()) {
        if !p2p.contains(&op.name()) {
            p2p.push(op.name());
        }
    }
    if p2p.is_empty() || protos.iter().all(|&p| p == Proto::Auto) {
        return None;
    }
    let why = "NCCL_PROTO does not apply to point-to-point calls (NCCL chooses itself: LL up \
               to NCCL_P2P_LL_THRESHOLD bytes per channel, Simple above)";
    let what = p2p.join(" and ");
    Some(if protos.contains(&Proto::Auto) {
        format!("{what}: measured with protocol auto only: {why}")
    } else {
        format!("{what}: {why}; measured with --proto auto only; skipped")
    })
}

/// Orders the plan's points by communicator setup (as given), algorithm (as first planned),
/// protocol (as given), then world size, keeping the plan's order within: one world
/// communicator per combination and one split per world size, instead of one per point.
/// Point-to-point ops are in the `auto` protocol's stages only ([`measured_with`]).
pub fn stages(points: &[Point], protos: &[Proto], setups: &[CommSetup]) -> Vec<Stage> {
    setups
        .iter()
        .flat_map(|&setup| {
            algo_proto_stages(points, protos)
                .into_iter()
                .map(move |s| Stage { setup, ..s })
        })
        .collect()
}

/// [`stages`] of one setup (the default).
fn algo_proto_stages(points: &[Point], protos: &[Proto]) -> Vec<Stage> {
    let mut algos: Vec<Algo> = Vec::new();
    let mut worlds: Vec<usize> = Vec::new();
    for p in points {
        if !algos.contains(&p.call.algo) {
            algos.push(p.call.algo);
        }
        if !worlds.contains(&p.world) {
            worlds.push(p.world);
        }
    }
    worlds.sort_unstable_by(|a, b| b.cmp(a));
    let mut out = Vec::new();
    for &algo in &algos {
        for &proto in protos {
            let groups = worlds
                .iter()
                .map(|&w| {
                    let of = points.iter().filter(|p| {
                        p.call.algo == algo && p.world == w && measured_with(p.call.op, proto)
                    });
                    (w, of.cloned().collect::<Vec<_>>())
                })
                .filter(|(_, p)| !p.is_empty())
                .collect();
            out.push(Stage {
                setup: CommSetup::default(),
                algo,
                proto,
                groups,
            });
        }
    }
    out
}

/// The colour of `rank` when the world communicator is split for a group of the first `world`
/// ranks: 0 for members, `NCCL_SPLIT_NOCOLOR` for the others (who get no communicator).
pub fn split_color(rank: usize, world: usize) -> c_int {
    if rank < world {
        0
    } else {
        sys::NCCL_SPLIT_NOCOLOR
    }
}

/// A unique id as the bytes stored under its key.
pub fn encode_id(id: &UniqueId) -> Vec<u8> {
    id.0.to_vec()
}

/// A unique id back from the store; anything but 128 bytes is refused.
pub fn decode_id(key: &str, bytes: &[u8]) -> Result<UniqueId> {
    let raw: [u8; sys::NCCL_UNIQUE_ID_BYTES] = bytes.try_into().map_err(|_| {
        Error::Rank(format!(
            "store key '{key}' holds {} bytes, not a {}-byte NCCL unique id",
            bytes.len(),
            sys::NCCL_UNIQUE_ID_BYTES
        ))
    })?;
    Ok(UniqueId(raw))
}

#[cfg(test)]
#[path = "tuning_tests.rs"]
mod tests;
