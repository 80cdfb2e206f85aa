//! The measurements an acceptance verdict is judged on: the points of one or more results
//! folders (the repeats), each point's repeats grouped under its key.
//!
//! Reading reuses the fit's strict reader (meta.json, summary.csv, samples.csv, cross-checked)
//! and ranks.csv's reader; grouping is pure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::collective::{Algo, DType, Op, Proto};
use crate::error::Result;
use crate::fit::schema::algo_label;
use crate::meta::failure::{self, Failure};
use crate::meta::RunStatus;
use crate::model::comm_setup::CommSetup;
use crate::model::record::{root_label, PointRecord, RankSummary};
use crate::report::ranks_csv::{read_ranks, RANKS_FILE};
use crate::report::run_reader::{read_run, MeasuredPoint};
use crate::report::straggler::{analyze, PointIters, Stragglers};

use super::placement::point_rank_nodes;

/// What identifies a point across repeats.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKey {
    pub op: Op,
    pub algo: Algo,
    pub proto: Option<Proto>,
    pub dtype: DType,
    pub world: usize,
    pub nodes: usize,
    pub bytes: usize,
    pub in_place: bool,
    /// The root of a rooted op; None for the others.
    pub root: Option<usize>,
    /// The NCCL communicators' registration and CTA settings (the default elsewhere).
    pub comm: CommSetup,
}

/// One repeat's measurement of a point.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// Index of the run (repeat) it came from, from 0.
    pub repeat: usize,
    pub record: PointRecord,
    /// The point's rows of ranks.csv (empty when the run has no ranks.csv).
    pub ranks: Vec<RankSummary>,
    /// meta.json's `hosts` of the run: the host of each node index.
    pub hosts: Vec<String>,
    /// The rank slowest in most of the point's iterations (samples.csv), where it has 2 or
    /// more ranks and samples.
    pub slowest: Option<SlowestRank>,
    /// The node slowest most often against its share of the ranks, where the point spans 2
    /// or more nodes and has samples (`rank` is then the node index).
    pub slowest_node: Option<SlowestRank>,
}

/// The rank (or node) slowest in most iterations of a point, and how far from chance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlowestRank {
    /// The rank, or the node index for a point's slowest node.
    pub rank: usize,
    /// The share of the iterations it was slowest in.
    pub share: f64,
    /// The share it would have by chance: 1/p for a rank, its share of the ranks for a node.
    pub chance: f64,
    /// (share − 1/p) / (1 − 1/p): 0 at chance, 1 when slowest in every iteration.
    pub bias: f64,
}

impl SlowestRank {
    /// From a point's per-iteration slowest ranks at `world` ranks; `None` below 2 ranks or
    /// without iterations.
    pub fn of(slowest: &[usize], world: usize) -> Option<SlowestRank> {
        if world < 2 || slowest.is_empty() {
            return None;
        }
        let counts = tally(slowest.iter().copied().filter(|&r| r < world));
        let chance = 1.0 / world as f64;
        most_biased(counts, slowest.len(), |_| chance)
    }

    /// The group (node) furthest from chance toward always slowest, from the per-iteration
    /// slowest ranks and `group_of[rank]`: a group of k of the p ranks is slowest by chance in
    /// k/p of the iterations, so its bias is `(share − k/p) / (1 − k/p)`. The highest bias
    /// wins, the lower id on a tie; `None` with fewer than 2 groups or no iterations. A rank
    /// outside `group_of` counts as an iteration no group was slowest in.
    pub fn of_groups(slowest: &[usize], group_of: &[usize]) -> Option<SlowestRank> {
        let members = tally(group_of.iter().copied());
        if members.len() < 2 || slowest.is_empty() {
            return None;
        }
        let counts = tally(slowest.iter().filter_map(|&r| group_of.get(r).copied()));
        let world = group_of.len() as f64;
        let chance = |g: usize| members.get(&g).copied().unwrap_or(0) as f64 / world;
        most_biased(counts, slowest.len(), chance)
    }
}

/// How many times each id occurs.
fn tally(ids: impl Iterator<Item = usize>) -> BTreeMap<usize, usize> {
    let mut counts = BTreeMap::new();
    for id in ids {
        *counts.entry(id).or_default() += 1;
    }
    counts
}

/// Of ids slowest `counts[id]` times in `iterations`, the one furthest from its `chance`
/// toward always: the highest `(share − chance) / (1 − chance)`, the lower id on a tie.
fn most_biased(
    counts: BTreeMap<usize, usize>,
    iterations: usize,
    chance: impl Fn(usize) -> f64,
) -> Option<SlowestRank> {
    (counts.into_iter())
        .map(|(id, n)| {
            let share = n as f64 / iterations as f64;
            let chance = chance(id);
            SlowestRank {
                rank: id,
                share,
                chance,
                bias: ((share - chance) / (1.0 - chance)).max(0.0),
            }
        })
        .max_by(|a, b| a.bias.total_cmp(&b.bias).then(b.rank.cmp(&a.rank)))
}

/// A point with all its repeats.
#[derive(Clone, Debug, PartialEq)]
pub struct PointGroup {
    pub key: GroupKey,
    pub obs: Vec<Observation>,
}

/// One results folder as the judge needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunData {
    pub dir: PathBuf,
    /// `complete`, or how the run ended otherwise.
    pub status: RunStatus,
    /// meta.json's `error`: why it did not complete.
    pub error: Option<String>,
    /// meta.json's `failure`, else what its `error` names (folders written before it).
    pub failure: Option<Failure>,
    pub has_ranks: bool,
    /// meta.json's `hosts` (empty in folders written before it existed).
    pub hosts: Vec<String>,
    /// meta.json's `rank_nodes`: the node of each rank of the launch.
    pub rank_nodes: Vec<usize>,
    pub points: Vec<(PointRecord, Vec<RankSummary>)>,
    /// Per point, the rank and node slowest most often (empty where samples.csv was not read).
    pub slowest: Vec<Slowest>,
    /// The run's stragglers over time, from its per-iteration samples.
    pub stragglers: Stragglers,
}

/// A point's rank and node slowest most often over its iterations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Slowest {
    pub rank: Option<SlowestRank>,
    pub node: Option<SlowestRank>,
}

/// Every repeat, grouped.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub runs: Vec<RunData>,
    /// Sorted by key.
    pub groups: Vec<PointGroup>,
}

impl GroupKey {
    /// The key of a summary row.
    pub fn of(r: &PointRecord) -> GroupKey {
        let k = &r.key;
        GroupKey {
            op: k.op,
            algo: k.algo,
            proto: k.proto,
            dtype: k.dtype,
            world: k.world,
            nodes: k.nodes.max(1),
            bytes: k.bytes,
            in_place: k.in_place,
            root: k.root,
            comm: k.comm,
        }
    }

    /// E.g. `allreduce ring f32 w2 1 MiB` (` in-place` appended when it is; `ring/ll128` with
    /// a protocol).
    pub fn label(&self) -> String {
        let nodes = if self.nodes > 1 {
            format!("/{}n", self.nodes)
        } else {
            String::new()
        };
        format!(
            "{} {} {} w{}{} {}{}{}{}",
            self.op,
            algo_label(self.algo, self.proto),
            self.dtype,
            self.world,
            nodes,
            crate::units::format_size(self.bytes),
            if self.in_place { " in-place" } else { "" },
            root_label(self.root),
            self.comm.label()
        )
    }
}

/// Reads one results folder: meta, summary and samples through [`read_run`], plus ranks.csv
/// when there is one (rows of points beyond the summary, left by a crash, are ignored).
pub fn read_run_data(dir: &Path) -> Result<RunData> {
    let run = read_run(dir)?;
    let ranks_path = dir.join(RANKS_FILE);
    let has_ranks = ranks_path.is_file();
    let mut per_point: Vec<Vec<RankSummary>> = vec![Vec::new(); run.points.len()];
    if has_ranks {
        for (point, r) in read_ranks(&ranks_path)? {
            if let Some(v) = per_point.get_mut(point) {
                v.push(r);
            }
        }
    }
    let placed: Vec<(Vec<usize>, Vec<usize>)> = (run.points.iter())
        .zip(&per_point)
        .map(|(p, rows)| placement(&p.record, rows, &run.meta.rank_nodes))
        .collect();
    let slowest = (run.points.iter().zip(&placed))
        .map(|(p, (_, nodes))| slowest_of(p, nodes))
        .collect();
    let iters: Vec<PointIters> = (run.points.iter().zip(&placed))
        .map(|(p, (launch_ranks, nodes))| PointIters {
            world: p.record.key.world,
            iters: &p.samples,
            launch_ranks,
            nodes,
        })
        .collect();
    let stragglers = analyze(&iters, &run.meta.rank_nodes);
    let points = run
        .points
        .iter()
        .map(|p| p.record.clone())
        .zip(per_point)
        .collect();
    Ok(RunData {
        dir: dir.to_path_buf(),
        status: run.meta.status,
        error: run.meta.error.clone(),
        failure: (run.meta.failure.clone())
            .or_else(|| run.meta.error.as_deref().and_then(failure::of_error)),
        has_ranks,
        hosts: run.meta.hosts.clone(),
        rank_nodes: run.meta.rank_nodes.clone(),
        points,
        slowest,
        stragglers,
    })
}

/// The launch rank and the node of each of a point's ranks: the nodes from its ranks.csv rows
/// (else meta.json's `rank_nodes`, else blocks) where it has rows or spans nodes, the launch
/// ranks from its rows; empty otherwise (the point's rank r is then launch rank r, on
/// `rank_nodes[r]`).
fn placement(
    rec: &PointRecord,
    rows: &[RankSummary],
    rank_nodes: &[usize],
) -> (Vec<usize>, Vec<usize>) {
    let k = &rec.key;
    let nodes = match rows.is_empty() && k.nodes <= 1 {
        true => Vec::new(),
        false => point_rank_nodes(rows, k.world, k.nodes, rank_nodes),
    };
    if rows.is_empty() {
        return (Vec::new(), nodes);
    }
    let mut launch: Vec<usize> = (0..k.world).collect();
    for r in rows {
        if let Some(x) = launch.get_mut(r.rank) {
            *x = r.global_rank;
        }
    }
    (launch, nodes)
}

/// The rank and node slowest most often at one point, its ranks on `nodes` (see
/// [`placement`]).
fn slowest_of(p: &MeasuredPoint, nodes: &[usize]) -> Slowest {
    let k = &p.record.key;
    let slowest: Vec<usize> = p.samples.iter().map(|s| s.slowest_rank).collect();
    let node = (k.nodes > 1).then(|| SlowestRank::of_groups(&slowest, nodes));
    Slowest {
        rank: SlowestRank::of(&slowest, k.world),
        node: node.flatten(),
    }
}

/// Reads every folder (in order: the repeats) and groups their points.
pub fn read_measured(dirs: &[PathBuf]) -> Result<Measured> {
    let runs = dirs
        .iter()
        .map(|d| read_run_data(d))
        .collect::<Result<Vec<_>>>()?;
    Ok(group(runs))
}

/// Groups the points of `runs` by key; repeats keep run order.
pub fn group(runs: Vec<RunData>) -> Measured {
    let mut map: BTreeMap<GroupKey, Vec<Observation>> = BTreeMap::new();
    for (repeat, run) in runs.iter().enumerate() {
        for (i, (record, ranks)) in run.points.iter().enumerate() {
            map.entry(GroupKey::of(record))
                .or_default()
                .push(Observation {
                    repeat,
                    record: record.clone(),
                    ranks: ranks.clone(),
                    hosts: run.hosts.clone(),
                    slowest: run.slowest.get(i).and_then(|s| s.rank),
                    slowest_node: run.slowest.get(i).and_then(|s| s.node),
                });
        }
    }
    let groups = map
        .into_iter()
        .map(|(key, obs)| PointGroup { key, obs })
        .collect();
    Measured { runs, groups }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::Op;
    use crate::model::call::Register;

    #[test]
    fn the_most_often_slowest_rank_and_its_distance_from_chance() {
        // 4 ranks, 10 iterations: rank 2 slowest in 7 (chance 2.5): (0.7 - 0.25) / 0.75.
        let ranks = [2, 2, 1, 2, 2, 0, 2, 2, 3, 2];
        let s = SlowestRank::of(&ranks, 4).unwrap();
        assert_eq!((s.rank, s.share), (2, 0.7));
        assert!((s.bias - 0.6).abs() < 1e-12);
        // Always the same rank: 1; evenly spread: 0; a tie goes to the lower rank.
        assert_eq!(SlowestRank::of(&[1; 5], 2).unwrap().bias, 1.0);
        let even = SlowestRank::of(&[0, 1, 0, 1], 2).unwrap();
        assert_eq!((even.rank, even.bias), (0, 0.0));
        assert_eq!(SlowestRank::of(&[0, 0], 1), None);
        assert_eq!(SlowestRank::of(&[], 4), None);
    }

    #[test]
    fn points_of_other_roots_or_communicator_setups_are_other_groups() {
        let local = CommSetup {
            register: Some(Register::Local),
            ..Default::default()
        };
        let plain = PointRecord::example(Op::Broadcast, 1 << 20, 4);
        let mut root_2 = plain.clone();
        root_2.key.root = Some(2);
        let registered = plain.clone().with_comm(local);
        let run = RunData {
            dir: PathBuf::from("/r"),
            status: RunStatus::Complete,
            error: None,
            failure: None,
            has_ranks: false,
            hosts: Vec::new(),
            rank_nodes: Vec::new(),
            points: [plain, root_2, registered]
                .into_iter()
                .map(|r| (r, Vec::new()))
                .collect(),
            slowest: Vec::new(),
            stragglers: Stragglers::default(),
        };
        let m = group(vec![run]);
        assert_eq!(m.groups.len(), 3);
        let labels: Vec<String> = m.groups.iter().map(|g| g.key.label()).collect();
        assert!(labels.iter().any(|l| l.ends_with(" root 2")), "{labels:?}");
        assert!(
            labels.iter().any(|l| l.ends_with(" register local")),
            "{labels:?}"
        );
    }
}
