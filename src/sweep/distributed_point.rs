//! One point of a multi-host launch, both sides: rank 0 starts it (a word to every rank),
//! measures where a member and gathers the members' times; another member measures and sends
//! its times to rank 0.

use std::time::Duration;

use crate::backend::host::algo::Group;
use crate::backend::host::transport::hybrid::HybridTransport;
use crate::backend::host::transport::tcp::TcpTransport;
use crate::backend::host::transport::{Combine, Transport};
use crate::error::{Error, Result};
use crate::model::plan::Point;
use crate::model::topology::{Topology, WorldShape};
use crate::sweep::cluster::Cluster;
use crate::sweep::rank::{measure, RankBuffers};
use crate::sweep::roles::Roles;

/// The ranks of `point`'s group, in group order.
pub fn members_of(topo: &Topology, point: &Point) -> Vec<usize> {
    match point.pair {
        // One rank on each node: every node holds a rank (nodes come from the ranks' hosts).
        Some((a, b)) => [a, b].iter().map(|&n| topo.ranks_on(n)[0]).collect(),
        None => topo.members(WorldShape {
            nodes: point.nodes,
            per_node: point.world / point.nodes.max(1),
        }),
    }
}

/// The members of `point`'s group and this rank's place in it, if it is one.
pub fn group_of(topo: &Topology, point: &Point, rank: usize) -> Option<Group> {
    let members = members_of(topo, point);
    let me = members.iter().position(|&r| r == rank)?;
    Some(Group { members, me })
}

/// How long a rank may wait for the start of the point after `prev`: every iteration of `prev`
/// may take up to the stall timeout before a member notices.
pub fn start_limit(prev: Option<&Point>, timeout: Duration) -> Duration {
    let iterations = prev.map_or(0, |p| p.warmup + 2 * p.iters + 1) as u32;
    timeout.saturating_mul(iterations.saturating_add(2))
}

/// A member's part of a point other than rank 0's: measure, then send the times to rank 0.
pub(crate) fn member_part(
    t: &mut HybridTransport,
    g: &Group,
    point: &Point,
    bufs: &mut RankBuffers,
) -> Result<()> {
    let m = measure(t, &Roles::one(g.clone()), point, bufs, &|| {})?;
    let mut payload: Vec<u64> = vec![m.wrong.to_le(), m.loop_us.to_bits().to_le()];
    payload.extend(m.times.iter().map(|t| t.to_bits().to_le()));
    t.tcp().send(0, bytemuck::cast_slice(&payload))
}

/// Rank 0's word in place of a point's start where a soak ends at a cycle's end.
pub const SOAK_OVER: u64 = u64::MAX;

/// Receives rank 0's start message for point `k`: true to measure it, false where the soak is
/// over.
pub fn wait_start(t: &mut TcpTransport, k: usize, limit: Duration) -> Result<bool> {
    t.wait_message(0, limit)?;
    let mut word = [0u8; 8];
    t.recv(0, &mut word, Combine::Copy)?;
    let got = u64::from_le_bytes(word);
    if got == SOAK_OVER {
        return Ok(false);
    }
    if got != k as u64 {
        return Err(Error::Rank(format!(
            "rank {}: rank 0 started point {got} where point {k} was due",
            t.rank()
        )));
    }
    Ok(true)
}

/// Rank 0's part of point `k`: start every rank, measure if a member, and gather the members'
/// times, wrong counts and loop times in group order.
pub type Gathered = (Vec<usize>, Vec<Vec<f64>>, Vec<u64>, Vec<f64>);
pub(crate) fn run_point(
    c: &mut Cluster,
    k: usize,
    point: &Point,
    bufs: &mut RankBuffers,
    timeout: Duration,
) -> Result<Gathered> {
    let t = &mut c.transport;
    for r in 1..t.nranks() {
        t.tcp().send(r, &(k as u64).to_le_bytes())?;
    }
    let members = members_of(&c.topology, point);
    gather(c, point, members, bufs, timeout)
}

/// Rank 0's part of a started point of `members` (global ranks, in group order): measure if
/// one of them, and gather every member's times, wrong counts and loop times in group order.
pub(crate) fn gather(
    c: &mut Cluster,
    point: &Point,
    members: Vec<usize>,
    bufs: &mut RankBuffers,
    timeout: Duration,
) -> Result<Gathered> {
    let t = &mut c.transport;
    let (mut rank_times, mut wrongs, mut loops) = (Vec::new(), Vec::new(), Vec::new());
    let mine = match members.iter().position(|&r| r == 0) {
        Some(me) => {
            let g = Group {
                members: members.clone(),
                me,
            };
            Some(measure(t, &Roles::one(g), point, bufs, &|| {})?)
        }
        None => {
            // Not a member (a pair of other nodes): wait while they measure.
            t.tcp()
                .wait_message(members[0], start_limit(Some(point), timeout))?;
            None
        }
    };
    let mut payload = vec![0u64; 2 + point.iters];
    // In group order: rank 0's own times where it is a member, wherever it stands.
    for &r in &members {
        if let (0, Some(m)) = (r, &mine) {
            rank_times.push(m.times.clone());
            wrongs.push(m.wrong);
            loops.push(m.loop_us);
            continue;
        }
        t.tcp()
            .recv(r, bytemuck::cast_slice_mut(&mut payload), Combine::Copy)?;
        wrongs.push(u64::from_le(payload[0]));
        loops.push(f64::from_bits(u64::from_le(payload[1])));
        let times = payload[2..]
            .iter()
            .map(|&b| f64::from_bits(u64::from_le(b)));
        rank_times.push(times.collect());
    }
    Ok((members, rank_times, wrongs, loops))
}
