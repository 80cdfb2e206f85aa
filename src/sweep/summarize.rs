//! Turns every rank's raw iteration times into the records of one point.
//!
//! An iteration lasts until its slowest rank finishes, so the iteration's time is the maximum
//! over ranks (nccl-tests reports the same). Bandwidths come from the median iteration time,
//! except `busbw_gbps_mean`, which uses the mean like nccl-tests' printed numbers.

use crate::collective::algbw_gbps;
use crate::collective::busbw_gbps;
use crate::error::{Error, Result};
use crate::model::plan::Point;
use crate::model::record::{IterSample, PointKey, PointRecord, RankSummary};
use crate::model::topology::Topology;
use crate::stats::{self, Summary};

/// A summarised point: its summary row, its iterations and each rank's view.
pub type Summarized = (PointRecord, Vec<IterSample>, Vec<RankSummary>);

/// [`summarize`] of `point`, invalid samples refused with a line naming the point.
pub fn summarize_point(
    key: PointKey,
    point: &Point,
    rank_times: &[Vec<f64>],
    wrong: &[u64],
) -> Result<Summarized> {
    let (mut rec, samples, ranks) =
        summarize(key, point.warmup, rank_times, wrong).ok_or_else(|| {
            Error::Rank(format!(
                "invalid samples from the ranks for {}",
                point.describe()
            ))
        })?;
    rec.cycle = point.cycle;
    Ok((rec, samples, ranks))
}

/// [`summarize_point`] for a group of the first `point.world` ranks of `topo` (the groups of
/// the MPI and NCCL backends): the nodes the group spans, and each member's node.
pub fn summarize_first_ranks(
    key: PointKey,
    point: &Point,
    topo: &Topology,
    rank_times: &[Vec<f64>],
    wrong: &[u64],
) -> Result<Summarized> {
    let members: Vec<usize> = (0..point.world.min(rank_times.len())).collect();
    summarize_members(key, point, (topo, &members), rank_times, wrong)
}

/// [`summarize_point`] for the group of global ranks `members` of `topo` (in group order,
/// `rank_times[i]` being `members[i]`'s): the nodes it spans, each member's global rank and
/// node, and the slowest rank as a global rank.
pub fn summarize_members(
    mut key: PointKey,
    point: &Point,
    (topo, members): (&Topology, &[usize]),
    rank_times: &[Vec<f64>],
    wrong: &[u64],
) -> Result<Summarized> {
    let node = |r: usize| topo.node_of.get(r).copied().unwrap_or(0);
    let mut nodes: Vec<usize> = members.iter().map(|&r| node(r)).collect();
    nodes.sort_unstable();
    nodes.dedup();
    key.nodes = nodes.len().max(1);
    let mut row = summarize_point(key, point, rank_times, wrong)?;
    place_members(&mut row, members);
    for r in row.2.iter_mut() {
        r.node = node(r.global_rank);
    }
    Ok(row)
}

/// Gives a group's summary its members' global ranks (`members[i]` is the group's rank `i`):
/// every rank's row, and the slowest rank.
pub fn place_members(row: &mut Summarized, members: &[usize]) {
    for (s, &global) in row.2.iter_mut().zip(members) {
        s.global_rank = global;
    }
    let slowest = &mut row.0.slowest_rank;
    *slowest = members.get(*slowest).copied().unwrap_or(*slowest);
}

/// Summarises one point. `rank_times[r][i]` is rank `r`'s time in microseconds of timed
/// iteration `i` (every rank the same number of iterations, at least one); `wrong[r]` is the
/// number of wrong elements rank `r` found. `None` when there are no ranks or iterations, when
/// the ranks disagree on the iteration count, when `wrong` has another length, or when a time
/// is not finite.
pub fn summarize(
    key: PointKey,
    warmup: usize,
    rank_times: &[Vec<f64>],
    wrong: &[u64],
) -> Option<Summarized> {
    let iters = iteration_count(rank_times, wrong)?;
    let samples: Vec<IterSample> = (0..iters).map(|i| iteration(rank_times, i)).collect();
    let ranks = rank_summaries(rank_times, wrong)?;
    let wrong = wrong.iter().fold(0u64, |a, &w| a.saturating_add(w));
    let record = record_of(key, warmup, &samples, rank_times.len(), wrong)?;
    Some((record, samples, ranks))
}

/// The summary row of a point whose iterations are `samples` (each the slowest of `ranks`
/// ranks, with the fastest rank's time), `wrong` elements in all; `None` without samples or
/// where a time is not finite. Also for imported calls that are samples of their own.
pub fn record_of(
    key: PointKey,
    warmup: usize,
    samples: &[IterSample],
    ranks: usize,
    wrong: u64,
) -> Option<PointRecord> {
    let times: Vec<f64> = samples.iter().map(|s| s.time_us).collect();
    let t = Summary::of(&times)?;
    let mut skews: Vec<f64> = samples.iter().map(|s| s.time_us - s.fastest_us).collect();
    skews.sort_by(f64::total_cmp);
    let algbw = algbw_gbps(key.op, key.bytes, key.world, t.median);
    Some(PointRecord {
        iters: samples.len(),
        warmup,
        time_us_mean: t.mean,
        time_us_median: t.median,
        time_us_min: t.min,
        time_us_p95: t.p95,
        time_us_p99: t.p99,
        time_us_max: t.max,
        time_us_stddev: t.stddev,
        time_cv: t.cv,
        time_us_mad: t.mad,
        algbw_gbps: algbw,
        busbw_gbps: busbw_gbps(key.op, key.world, algbw),
        busbw_gbps_mean: busbw_gbps(
            key.op,
            key.world,
            algbw_gbps(key.op, key.bytes, key.world, t.mean),
        ),
        wrong,
        slowest_rank: most_often_slowest(samples, ranks),
        skew_us_median: stats::median(&skews),
        nccl_estimate_us: None,
        loop_time_us: None,
        nccl_call: None,
        nccl_algo: None,
        nccl_proto: None,
        cycle: 0,
        ended_utc: None,
        slowdown: None,
        aggregate_busbw_gbps: None,
        compute_slowdown: None,
        key,
    })
}

/// The common iteration count, or `None` when the input is empty or inconsistent.
fn iteration_count(rank_times: &[Vec<f64>], wrong: &[u64]) -> Option<usize> {
    let iters = rank_times.first()?.len();
    let consistent = iters > 0
        && wrong.len() == rank_times.len()
        && rank_times
            .iter()
            .all(|t| t.len() == iters && t.iter().all(|x| x.is_finite()));
    consistent.then_some(iters)
}

/// Iteration `i` across ranks: the slowest rank's time (ties go to the lowest rank) and the
/// fastest rank's time.
fn iteration(rank_times: &[Vec<f64>], i: usize) -> IterSample {
    let mut sample = IterSample {
        time_us: rank_times[0][i],
        slowest_rank: 0,
        fastest_us: rank_times[0][i],
    };
    for (r, times) in rank_times.iter().enumerate().skip(1) {
        if times[i] > sample.time_us {
            sample.time_us = times[i];
            sample.slowest_rank = r;
        }
        sample.fastest_us = sample.fastest_us.min(times[i]);
    }
    sample
}

/// The rank that was slowest in the most iterations; ties go to the lowest rank.
fn most_often_slowest(samples: &[IterSample], ranks: usize) -> usize {
    let mut counts = vec![0usize; ranks];
    for s in samples {
        if let Some(c) = counts.get_mut(s.slowest_rank) {
            *c += 1;
        }
    }
    // max_by_key keeps the last maximum, so scan in reverse to keep the lowest rank.
    (0..ranks).rev().max_by_key(|&r| counts[r]).unwrap_or(0)
}

/// Each rank's own timing summary and wrong count.
fn rank_summaries(rank_times: &[Vec<f64>], wrong: &[u64]) -> Option<Vec<RankSummary>> {
    rank_times
        .iter()
        .zip(wrong)
        .enumerate()
        .map(|(rank, (times, &wrong))| {
            let s = Summary::of(times)?;
            Some(RankSummary {
                rank,
                global_rank: rank,
                node: 0,
                time_us_median: s.median,
                time_us_mean: s.mean,
                time_us_max: s.max,
                wrong,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "summarize_tests.rs"]
mod tests;
