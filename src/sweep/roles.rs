//! What each rank process of a host launch does at a point: the groups it meets and calls in,
//! and, for a `--concurrent` point, which of the calls at once is its own.
//!
//! A host rank is one process; its calls at once (`--concurrent`) run in lanes: every rank has
//! a process per lane, process `lane × ranks + rank`, each on its own channels, so that no two
//! calls' messages share a stream (as MPI's communicators and NCCL's keep them apart). Lane 0 is
//! the rank's own process and makes every call that runs alone; lane `l` makes call `l` of a
//! point's calls at once. A lane is bound as one more rank would be: with a core for every
//! process, each call has cores of its own and the calls share memory bandwidth and caches, as
//! concurrent NCCL kernels have SMs of their own and share a GPU's links and memory; with fewer
//! cores they share cores as well (the launcher says so).

use crate::backend::host::algo::Group;
use crate::model::plan::{Plan, Point};

/// A rank's groups at one point.
#[derive(Clone, Debug)]
pub(crate) struct Roles {
    /// The ranks that leave a barrier together before every timed call: the call's group, or
    /// every group of a split running at once, so that their calls overlap.
    pub start: Group,
    /// The ranks of this rank's call.
    pub call: Group,
}

impl Roles {
    /// One group that meets and calls alone.
    pub fn one(g: Group) -> Roles {
        Roles {
            start: g.clone(),
            call: g,
        }
    }
}

/// The groups of global rank `rank` at `point`: those that meet before every timed call and
/// its call's (one group of the first `world` ranks without a split); `None` where it rests.
pub(crate) fn roles(point: &Point, rank: usize) -> Option<Roles> {
    let Some(split) = &point.split else {
        return Group::first(point.world, rank).map(Roles::one);
    };
    let (start, call) = split.roles(rank)?;
    Some(Roles {
        start: group_of(start, rank)?,
        call: group_of(call, rank)?,
    })
}

/// `members` as a group, with `me` its place; `None` where `me` is not among them.
fn group_of(members: Vec<usize>, me: usize) -> Option<Group> {
    let at = members.iter().position(|&r| r == me)?;
    Some(Group { members, me: at })
}

/// The rank processes of a host launch: `ranks` ranks, each with a process per lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lanes {
    pub ranks: usize,
    pub lanes: usize,
}

impl Lanes {
    /// The processes `plan` needs at `ranks` ranks.
    pub fn of(plan: &Plan, ranks: usize) -> Lanes {
        Lanes {
            ranks: ranks.max(1),
            lanes: plan.lanes(),
        }
    }

    /// Rank processes in all.
    pub fn processes(&self) -> usize {
        self.ranks * self.lanes
    }

    /// The process of `rank` in `lane`.
    pub fn process(&self, lane: usize, rank: usize) -> usize {
        lane * self.ranks + rank
    }

    /// The rank a process belongs to.
    pub fn rank_of(&self, process: usize) -> usize {
        process % self.ranks
    }

    /// A process as messages name it: `rank 3`, or `rank 3 (lane 1, process 7)` beside calls
    /// at once.
    pub fn name(&self, process: usize) -> String {
        let rank = self.rank_of(process);
        if self.lanes == 1 {
            return format!("rank {rank}");
        }
        let lane = process / self.ranks;
        format!("rank {rank} (lane {lane}, process {process})")
    }

    /// What the launcher says of the lanes on `cores` cores; nothing without calls at once.
    pub fn note(&self, cores: usize) -> Option<String> {
        let (n, lanes) = (self.processes(), self.lanes);
        if lanes == 1 {
            return None;
        }
        let shared = if n > cores {
            format!(
                "; only {cores} cores: the calls at once also share cores, so their slowdowns \
                 include time-sharing (give {n} cores for each call on cores of its own)"
            )
        } else {
            String::new()
        };
        Some(format!(
            "--concurrent: each rank makes its {lanes} calls at once in {lanes} processes, {n} \
             in all{shared}"
        ))
    }

    /// What `process` does at `point`: its roles and the call it makes (the point's own, or
    /// its lane's of the calls at once); `None` where it rests.
    pub fn part<'p>(&self, point: &'p Point, process: usize) -> Option<(Roles, &'p Point)> {
        let (lane, rank) = (process / self.ranks, self.rank_of(process));
        let calls = point.calls();
        if calls.len() == 1 {
            return (lane == 0)
                .then(|| roles(point, rank))
                .flatten()
                .map(|r| (r, point));
        }
        let call = *calls.get(lane)?;
        let (_, own) = call.split.as_ref()?.roles(rank)?;
        let own = own.iter().map(|&r| self.process(lane, r)).collect();
        // Every call's ranks leave one barrier together, so that the calls overlap.
        let mut start: Vec<usize> = (calls.iter().enumerate())
            .filter_map(|(l, c)| Some((l, c.split.as_ref()?)))
            .flat_map(|(l, s)| s.running().into_iter().map(move |i| (l, i, s)))
            .flat_map(|(l, i, s)| s.split.groups[i].iter().map(move |&r| (l, r)))
            .map(|(l, r)| self.process(l, r))
            .collect();
        start.sort_unstable();
        start.dedup();
        let roles = Roles {
            start: group_of(start, process)?,
            call: group_of(own, process)?,
        };
        Some((roles, call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Op;
    use crate::model::plan::SweepOptions;

    /// The plan tests' small host sweep, at `ranks` ranks and one world of all of them.
    fn opts(ranks: usize) -> SweepOptions {
        let mut o = crate::model::plan::tests::opts();
        (o.ops, o.ranks, o.world_sizes, o.sizes) =
            (vec![Op::AllReduce], ranks, vec![ranks], vec![4096]);
        o.algos.truncate(1);
        o
    }

    fn plan(concurrent: &str, ranks: usize) -> Plan {
        let mut o = opts(ranks);
        let c: crate::model::concurrent::Concurrent = concurrent.parse().unwrap();
        o.ops = c.ops();
        o.concurrent = Some(c);
        o.plan()
    }

    #[test]
    fn lanes_make_each_call_at_once_on_its_own_processes() {
        let plan = plan("allreduce@/2,allgather@%2", 4);
        let lanes = Lanes::of(&plan, 4);
        assert_eq!((lanes.lanes, lanes.processes()), (2, 8));
        // Four groups alone (each on lane 0), then both calls at once.
        assert_eq!(plan.points.len(), 5);
        let together = &plan.points[4];
        let (roles, call) = lanes.part(together, 5).unwrap();
        assert_eq!(call.call.op, Op::AllGather);
        assert_eq!((roles.call.members.clone(), roles.call.me), (vec![5, 7], 0));
        assert_eq!(roles.start.members, (0..8).collect::<Vec<_>>());
        let (roles, call) = lanes.part(together, 2).unwrap();
        assert_eq!(call.call.op, Op::AllReduce);
        assert_eq!(roles.call.members, [2, 3]);
        // A group alone: its ranks' lane-0 processes, the other lane resting.
        let alone = &plan.points[3];
        let (roles, _) = lanes.part(alone, 3).unwrap();
        assert_eq!(
            (roles.call.members.clone(), roles.start.members),
            (vec![1, 3], vec![1, 3])
        );
        assert!(lanes.part(alone, 7).is_none() && lanes.part(alone, 0).is_none());
        assert_eq!(lanes.name(7), "rank 3 (lane 1, process 7)");
        assert!(lanes.note(8).unwrap().ends_with("2 processes, 8 in all"));
        assert!(lanes.note(2).unwrap().contains("only 2 cores"));
    }

    #[test]
    fn one_lane_without_calls_at_once() {
        let plan = opts(3).plan();
        let lanes = Lanes::of(&plan, 3);
        assert_eq!(
            (lanes.processes(), lanes.name(2)),
            (3, "rank 2".to_string())
        );
        assert_eq!(lanes.note(1), None);
        let (roles, call) = lanes.part(&plan.points[0], 2).unwrap();
        assert_eq!((roles.call.members, call.world), (vec![0, 1, 2], 3));
    }
}
