//! An MPI world as the sweep drives it: the communicator of each world size, the hosts of the
//! ranks, one point measured on this rank (warm-up, barrier-timed iterations, exact check) and
//! the payload every rank sends to world rank 0.

use std::time::Instant;

use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;

use super::call::MpiBuffers;
use super::progress::progressed;
use super::raw::Handles;
use crate::collective::Op;
use crate::error::Result;
use crate::model::plan::{Point, PointSplit};
use crate::model::topology::Topology;

/// The communicators of a plan: one per world size (`Some` on its first `p` ranks, `None`
/// elsewhere), and one per `--split` of a world and per `--concurrent` entry (`Some` on the
/// ranks of that world: the group of this rank).
pub struct Groups {
    worlds: Vec<(usize, Option<SimpleCommunicator>)>,
    splits: Vec<(SplitKey, Option<SimpleCommunicator>)>,
}

/// A split's communicator: its label and the op called on it. `--concurrent` entries of one
/// rule need a communicator each: their nonblocking calls restart in a different order on
/// different ranks, and calls on one communicator must start in one order on all.
type SplitKey = (String, Op);

fn split_key(p: &Point) -> Option<SplitKey> {
    Some((p.split.as_ref()?.split.label.clone(), p.call.op))
}

impl Groups {
    /// Splits `world` once per distinct size and once per distinct split of the plan's
    /// `points` (collective over the world, in the same order on every rank since every rank
    /// expands the same options).
    pub fn split(world: &SimpleCommunicator, sizes: &[usize], points: &[Point]) -> Groups {
        let rank = world.rank();
        let mut worlds = Vec::new();
        // A split's groups at once start together: the world it split has a communicator too.
        let whole = points
            .iter()
            .filter_map(|p| p.split.as_ref().map(split_world));
        for p in sizes.iter().copied().chain(whole) {
            if worlds.iter().any(|(q, _)| *q == p) {
                continue;
            }
            let member = usize::try_from(rank).is_ok_and(|r| r < p);
            let color = if member {
                Color::with_value(0)
            } else {
                Color::undefined()
            };
            worlds.push((p, world.split_by_color_with_key(color, rank)));
        }
        let mut splits: Vec<(SplitKey, Option<SimpleCommunicator>)> = Vec::new();
        for call in points.iter().flat_map(Point::calls) {
            let (Some(s), Some(key)) = (&call.split, split_key(call)) else {
                continue;
            };
            if splits.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let groups = &s.split;
            let own = usize::try_from(rank)
                .ok()
                .and_then(|r| groups.groups.iter().position(|g| g.contains(&r)));
            let color = own.and_then(|i| i32::try_from(i).ok());
            let color = color.map_or(Color::undefined(), Color::with_value);
            // Keyed by world rank: the group's ranks in the order of its global ranks.
            splits.push((key, world.split_by_color_with_key(color, rank)));
        }
        Groups { worlds, splits }
    }

    pub fn of(&self, p: usize) -> Option<&SimpleCommunicator> {
        self.worlds.iter().find(|(q, _)| *q == p)?.1.as_ref()
    }

    /// This rank's communicators at `point`: the ranks that leave a barrier together before
    /// every timed call, and each call's with its point (one, but for a `--concurrent` point:
    /// every entry's); `None` where it does not call.
    pub fn calls<'a>(
        &'a self,
        point: &'a Point,
        rank: usize,
    ) -> Option<(
        &'a SimpleCommunicator,
        Vec<(&'a SimpleCommunicator, &'a Point)>,
    )> {
        let calls = point.calls();
        let mut start = None;
        let mut comms = Vec::with_capacity(calls.len());
        for c in calls {
            let (s, comm) = self.roles(c, rank)?;
            start = start.or(Some(s));
            comms.push((comm, c));
        }
        Some((start?, comms))
    }

    /// This rank's communicators at `point`: the ranks that leave a barrier together before
    /// every timed call, and the ranks of its call (one group alone: its own; groups at once:
    /// the whole world, and its group); `None` where it does not call.
    fn roles(
        &self,
        point: &Point,
        rank: usize,
    ) -> Option<(&SimpleCommunicator, &SimpleCommunicator)> {
        let Some(s) = &point.split else {
            let comm = self.of(point.world)?;
            return Some((comm, comm));
        };
        s.roles(rank)?;
        let key = split_key(point)?;
        let own = self.splits.iter().find(|(k, _)| *k == key)?.1.as_ref()?;
        match s.alone {
            Some(_) => Some((own, own)),
            None => Some((self.of(split_world(s))?, own)),
        }
    }
}

/// The world a split made its groups of (they partition its ranks).
fn split_world(s: &PointSplit) -> usize {
    s.split.groups.iter().map(Vec::len).sum()
}

/// Every rank's node name, gathered on every rank (64 bytes each; as the host backend names
/// nodes: `COLLBENCH_NODE_NAME`, Slurm's, the host name), as the launch's topology.
pub fn hosts(world: &SimpleCommunicator) -> Topology {
    const LEN: usize = 64;
    let name = crate::launch::rendezvous::node_name();
    let mut mine = [0u8; LEN];
    let n = name.len().min(LEN);
    mine[..n].copy_from_slice(&name.as_bytes()[..n]);
    let mut all = vec![0u8; LEN * world.size() as usize];
    world.all_gather_into(&mine[..], &mut all[..]);
    let names: Vec<String> = all
        .chunks_exact(LEN)
        .map(|c| {
            String::from_utf8_lossy(c)
                .trim_end_matches('\0')
                .to_string()
        })
        .collect();
    Topology::from_hosts(&names)
}

/// This rank's part of one point: `[member, wrong, loop time bits, time bits...]` for each of
/// its calls (one but for a `--concurrent` point; zeros where not a member).
pub fn point_payload(
    world: &SimpleCommunicator,
    groups: &Groups,
    point: &Point,
    (bufs, h): (&mut Vec<MpiBuffers>, &Handles),
) -> Result<Vec<u64>> {
    // Every rank meets here, so rank 0 has written the previous point before this one starts.
    world.barrier();
    progressed();
    let calls = point.calls();
    if bufs.len() < calls.len() {
        bufs.resize_with(calls.len(), MpiBuffers::default);
    }
    let width = 3 + point.iters;
    let mut payload = vec![0u64; width * calls.len()];
    let rank = usize::try_from(world.rank()).unwrap_or(usize::MAX);
    let measured = match groups.calls(point, rank) {
        // A --concurrent's calls, alone too, are started and waited on alike.
        Some((start, comms)) if point.in_concurrent() => {
            super::together::measure_together(start, &comms, bufs, h)?
        }
        Some((start, comms)) => match (comms.first(), bufs.first_mut()) {
            (Some(&(comm, p)), Some(b)) => vec![measure((start, comm), p, (b, h))?],
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    for ((times, loop_us, wrong), slots) in measured.iter().zip(payload.chunks_mut(width)) {
        slots[0] = 1;
        slots[1] = *wrong;
        slots[2] = loop_us.to_bits();
        for (slot, t) in slots[3..].iter_mut().zip(times) {
            *slot = t.to_bits();
        }
    }
    Ok(payload)
}

/// Each member's times of the timed iterations, wrong count and loop time.
pub type MembersSamples = (Vec<Vec<f64>>, Vec<u64>, Vec<f64>);

/// The times, wrong counts and loop times of global ranks `members` (in their order) from the
/// payloads gathered from every rank, `len` words each; `None` where one of them did not call.
pub fn samples_of(all: &[u64], len: usize, members: &[usize]) -> Option<MembersSamples> {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for &r in members {
        let c = all.get(r.checked_mul(len)?..)?.get(..len)?;
        if c.len() < 3 || c[0] != 1 {
            return None;
        }
        out.0
            .push(c[3..].iter().map(|&b| f64::from_bits(b)).collect());
        out.1.push(c[1]);
        out.2.push(f64::from_bits(c[2]));
    }
    Some(out)
}

/// Warm-up, timed iterations, nccl-tests' loop, then the correctness check: this rank's time
/// of every timed iteration and of one call of the loop in microseconds, and the wrong
/// elements in its output. Every timed call and the loop start at a barrier of `start` (the
/// call's own group, or every group running at once), the calls go to `comm`.
fn measure(
    (start, comm): (&SimpleCommunicator, &SimpleCommunicator),
    p: &Point,
    (bufs, h): (&mut MpiBuffers, &Handles),
) -> Result<(Vec<f64>, f64, u64)> {
    let (size, rank) = (comm.size() as usize, comm.rank() as usize);
    let call = MpiBuffers::prepare(comm, p, h)?;
    bufs.fill(p, size, rank);
    for _ in 0..p.warmup {
        start.barrier();
        bufs.call(&call, p)?;
        progressed();
    }
    // Allocated before timing so the timed loop never allocates.
    let mut times = Vec::with_capacity(p.iters);
    let agg = p.timing.agg.max(1);
    for _ in 0..p.iters {
        start.barrier();
        let began = Instant::now();
        // nccl-tests -m: the iteration's calls back to back, each the iteration's share.
        for _ in 0..agg {
            bufs.call(&call, p)?;
        }
        times.push(began.elapsed().as_nanos() as f64 / 1e3 / agg as f64);
        progressed();
    }
    // nccl-tests' timing (`common.cu`, its default): one barrier, then the calls back to back,
    // this rank's wall clock over the loop divided by the calls. A blocking MPI call returns
    // when this rank's part is done, as nccl-tests -z 1 waits.
    let iters = p.iters.max(1);
    start.barrier();
    let began = Instant::now();
    for _ in 0..iters {
        for _ in 0..agg {
            bufs.call(&call, p)?;
        }
        progressed();
    }
    let loop_us = began.elapsed().as_nanos() as f64 / 1e3 / (iters * agg) as f64;
    bufs.fill(p, size, rank);
    comm.barrier();
    bufs.call(&call, p)?;
    progressed();
    Ok((times, loop_us, bufs.check(p, (size, rank), &call)))
}

#[cfg(test)]
mod tests {
    use super::samples_of;

    #[test]
    fn a_groups_members_are_taken_in_its_order_and_a_resting_member_is_refused() {
        let t = |us: f64| us.to_bits();
        let all = [1, 0, t(1.5), t(2.0), 0, 0, 0, 0, 1, 3, t(4.5), t(5.0)];
        let (times, wrong, loops) = samples_of(&all, 4, &[0, 2]).unwrap();
        assert_eq!(times, vec![vec![2.0], vec![5.0]]);
        assert_eq!(wrong, vec![0, 3]);
        assert_eq!(loops, vec![1.5, 4.5]);
        let (times, _, _) = samples_of(&all, 4, &[2, 0]).unwrap();
        assert_eq!(times, vec![vec![5.0], vec![2.0]]);
        assert!(
            samples_of(&all, 4, &[0, 1]).is_none(),
            "rank 1 did not call"
        );
        assert!(samples_of(&all, 4, &[3]).is_none(), "no rank 3");
        assert!(
            samples_of(&all, 2, &[0]).is_none(),
            "too short for a payload"
        );
    }
}
