//! The plan walked by every MPI rank: split the groups, then per point measure (members),
//! gather every rank's samples to world rank 0, and let rank 0 write the point.

use std::time::Instant;

use mpi::topology::{Color, SimpleCommunicator};
use mpi::traits::*;

use super::call::MpiBuffers;
use super::raw::Handles;
use crate::error::{Error, Result};
use crate::meta::Meta;
use crate::model::call::BackendKind;
use crate::model::plan::{Plan, Point, SweepOptions};
use crate::model::topology::Topology;
use crate::report::run_dir::{run_dir_or_default, RunDir};
use crate::sweep::console::Console;
use crate::sweep::run::{close_run, open_console, Outcome, SweepRequest};
use crate::sweep::summarize::summarize;

/// The communicator of each world size: `Some` on its first `p` ranks, `None` elsewhere.
struct Groups(Vec<(usize, Option<SimpleCommunicator>)>);

impl Groups {
    /// Splits `world` once per distinct size (collective over the world, same order on every
    /// rank since every rank expands the same options).
    fn split(world: &SimpleCommunicator, sizes: &[usize]) -> Groups {
        let rank = world.rank();
        let mut groups = Vec::new();
        for &p in sizes {
            if groups.iter().any(|(q, _)| *q == p) {
                continue;
            }
            let member = usize::try_from(rank).is_ok_and(|r| r < p);
            let color = if member {
                Color::with_value(0)
            } else {
                Color::undefined()
            };
            groups.push((p, world.split_by_color_with_key(color, rank)));
        }
        Groups(groups)
    }

    fn of(&self, p: usize) -> Option<&SimpleCommunicator> {
        self.0.iter().find(|(q, _)| *q == p)?.1.as_ref()
    }
}

/// Runs the sweep on this rank. Rank 0 returns the outcome; the others `None`.
pub(super) fn run(
    req: &SweepRequest,
    world: &SimpleCommunicator,
    library: &super::Library,
    handles: &Handles,
) -> Result<Option<Outcome>> {
    let size = world.size() as usize;
    let opts = super::resolve(req, size)?;
    let plan = opts.plan_for(BackendKind::Mpi);
    if plan.points.is_empty() {
        return Err(Error::usage(format!(
            "nothing to measure: {}",
            plan.notes.first().map_or("no points", |n| n.as_str())
        )));
    }
    let groups = Groups::split(world, &opts.world_sizes);
    let topo = hosts(world);
    if world.rank() != 0 {
        follow(world, &groups, &plan, handles)?;
        return Ok(None);
    }
    match lead(
        req,
        &opts,
        &plan,
        (world, &groups, &topo),
        (library, handles),
    ) {
        Ok(outcome) => Ok(Some(outcome)),
        // The other ranks wait in MPI calls for rank 0: end the whole job.
        Err(e) if size > 1 => {
            eprintln!("collbench: {e}");
            world.abort(e.exit_code())
        }
        Err(e) => Err(e),
    }
}

/// A rank other than 0: every point, measured where a member, samples sent to rank 0.
fn follow(world: &SimpleCommunicator, groups: &Groups, plan: &Plan, h: &Handles) -> Result<()> {
    let mut bufs = MpiBuffers::default();
    let root = world.process_at_rank(0);
    for point in &plan.points {
        let payload = point_payload(world, groups, point, (&mut bufs, h))?;
        root.gather_into(&payload[..]);
    }
    Ok(())
}

/// Rank 0: the results folder, the console, and every point.
fn lead(
    req: &SweepRequest,
    opts: &SweepOptions,
    plan: &Plan,
    comms: (&SimpleCommunicator, &Groups, &Topology),
    (library, handles): (&super::Library, &Handles),
) -> Result<Outcome> {
    let dir = run_dir_or_default(req.out.as_deref(), &opts.ops, BackendKind::Mpi.name())?;
    let mut options = serde_json::to_value(opts).unwrap_or_default();
    if let Some(map) = options.as_object_mut() {
        let mca = library.mca.iter().cloned();
        let mca: serde_json::Map<String, serde_json::Value> =
            mca.map(|(k, v)| (k, v.into())).collect();
        map.insert("mpi_env".into(), mca.into());
    }
    let cmd = req.command_line.clone();
    let topo = comms.2;
    let mut meta = Meta::new(cmd, "mpi", "mpi", opts.ranks, topo.nodes(), options);
    meta.library = Some(library.version.clone());
    meta.hosts = topo.hosts.clone();
    meta.rank_nodes = topo.node_of.clone();
    let mut out = RunDir::create(&dir, &meta)?;
    super::interrupt::record(&mut super::interrupt::writing(), dir.clone(), out.meta(), 0);
    let console = open_console(plan, req.progress);
    let result = lead_points(plan, comms, (&mut out, handles), &console);
    super::interrupt::writing().take();
    console.finish();
    close_run(out, dir, result)
}

/// Rank 0's loop: measure, gather, summarise, write, print. Returns the points with wrong
/// results.
fn lead_points(
    plan: &Plan,
    (world, groups, topo): (&SimpleCommunicator, &Groups, &Topology),
    (out, handles): (&mut RunDir, &Handles),
    console: &Console,
) -> Result<usize> {
    let mut bufs = MpiBuffers::default();
    let mut wrong_points = 0;
    let root = world.process_at_rank(0);
    for point in &plan.points {
        console.running(&point.describe());
        let payload = point_payload(world, groups, point, (&mut bufs, handles))?;
        let mut all = vec![0u64; payload.len() * world.size() as usize];
        root.gather_into_root(&payload[..], &mut all[..]);
        let (rank_times, wrongs) = members_samples(&all, payload.len());
        let mut key = point.key(BackendKind::Mpi.name());
        // Groups are the first p ranks: the nodes they span, and each member's node.
        key.nodes = topo.node_of[..point.world]
            .iter()
            .max()
            .map_or(1, |n| n + 1);
        let (rec, samples, mut per_rank) = summarize(key, point.warmup, &rank_times, &wrongs)
            .ok_or_else(|| {
                Error::Rank(format!(
                    "invalid samples from the ranks for {}",
                    point.describe()
                ))
            })?;
        for r in per_rank.iter_mut() {
            r.node = topo.node_of[r.global_rank];
        }
        {
            let mut guard = super::interrupt::writing();
            out.append_point(&rec, &samples, &per_rank)?;
            let dir = out.path.clone();
            super::interrupt::record(&mut guard, dir, out.meta(), out.points());
        }
        console.point(&rec);
        wrong_points += usize::from(rec.wrong > 0);
    }
    Ok(wrong_points)
}

/// Every rank's host name, gathered on every rank (64 bytes each; `COLLBENCH_NODE_NAME`
/// overrides it as for the host backend), as the launch's topology.
fn hosts(world: &SimpleCommunicator) -> Topology {
    const LEN: usize = 64;
    let name = std::env::var(crate::launch::rendezvous::NODE_NAME_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| crate::meta::HostInfo::detect().hostname);
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

/// This rank's part of one point: `[member, wrong, time bits...]` (zeros where not a member).
fn point_payload(
    world: &SimpleCommunicator,
    groups: &Groups,
    point: &Point,
    bufs: (&mut MpiBuffers, &Handles),
) -> Result<Vec<u64>> {
    // Every rank meets here, so rank 0 has written the previous point before this one starts.
    world.barrier();
    let mut payload = vec![0u64; 2 + point.iters];
    if let Some(comm) = groups.of(point.world) {
        let (times, wrong) = measure(comm, point, bufs)?;
        payload[0] = 1;
        payload[1] = wrong;
        for (slot, t) in payload[2..].iter_mut().zip(&times) {
            *slot = t.to_bits();
        }
    }
    Ok(payload)
}

/// The members' times and wrong counts, in rank order, from the gathered payloads.
fn members_samples(all: &[u64], len: usize) -> (Vec<Vec<f64>>, Vec<u64>) {
    let members = all.chunks_exact(len).filter(|c| c[0] == 1);
    members
        .map(|c| (c[2..].iter().map(|&b| f64::from_bits(b)).collect(), c[1]))
        .unzip()
}

/// Warm-up, timed iterations, then the correctness check: this rank's time of every timed
/// iteration in microseconds, and the wrong elements in its output.
fn measure(
    comm: &SimpleCommunicator,
    p: &Point,
    (bufs, h): (&mut MpiBuffers, &Handles),
) -> Result<(Vec<f64>, u64)> {
    let (size, rank) = (comm.size() as usize, comm.rank() as usize);
    bufs.fill(p, size, rank);
    for _ in 0..p.warmup {
        comm.barrier();
        bufs.call(comm, p, h)?;
    }
    // Allocated before timing so the timed loop never allocates.
    let mut times = Vec::with_capacity(p.iters);
    for _ in 0..p.iters {
        comm.barrier();
        let start = Instant::now();
        bufs.call(comm, p, h)?;
        times.push(start.elapsed().as_nanos() as f64 / 1e3);
    }
    bufs.fill(p, size, rank);
    comm.barrier();
    bufs.call(comm, p, h)?;
    Ok((times, bufs.check(p, size, rank)))
}

#[cfg(test)]
mod tests {
    use super::members_samples;

    #[test]
    fn non_members_are_left_out_in_rank_order() {
        let t = |us: f64| us.to_bits();
        let all = [1, 0, t(2.0), 0, 0, 0, 1, 3, t(5.0)];
        let (times, wrong) = members_samples(&all, 3);
        assert_eq!(times, vec![vec![2.0], vec![5.0]]);
        assert_eq!(wrong, vec![0, 3]);
    }
}
