//! The plan walked by every MPI rank: split the groups, then per point measure (members),
//! gather every rank's samples to world rank 0, and let rank 0 write the point.

use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::interrupt;
use crate::backend::mpi::world::{hosts, point_payload, samples_of, Groups};
use crate::backend::mpi::{Handles, Library, MpiBuffers};
use crate::error::{Error, Result};
use crate::meta::Meta;
use crate::model::call::BackendKind;
use crate::model::plan::{Plan, Point, Soak, SweepOptions};
use crate::model::record::PointKey;
use crate::model::topology::Topology;
use crate::report::run_dir::run_dir_or_default;
use crate::stats::loop_time_of;
use crate::sweep::lead::{Lead, Outcome, PointRow};
use crate::sweep::request::SweepRequest;
use crate::sweep::summarize::summarize_members;

/// Runs the sweep on this rank. Rank 0 returns the outcome; the others `None`.
pub(super) fn run(
    req: &SweepRequest,
    world: &SimpleCommunicator,
    library: &Library,
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
    let groups = Groups::split(world, &opts.world_sizes, &plan.points);
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
            crate::say!("collbench: {e}");
            world.abort(e.exit_code())
        }
        Err(e) => Err(e),
    }
}

/// A rank other than 0: every point, measured where a member, samples sent to rank 0; in every
/// cycle of a soak, until they are counted out or rank 0 says the soak is over.
fn follow(world: &SimpleCommunicator, groups: &Groups, plan: &Plan, h: &Handles) -> Result<()> {
    let mut bufs: Vec<MpiBuffers> = Vec::new();
    let root = world.process_at_rank(0);
    for cycle in 0u64.. {
        if cycle > 0 && !another_cycle(world, &plan.soak, cycle, None) {
            break;
        }
        for point in &plan.points {
            super::stall::at(&point.describe());
            let payload = point_payload(world, groups, point, (&mut bufs, h))?;
            root.gather_into(&payload[..]);
        }
    }
    Ok(())
}

/// Whether cycle `done` (0-based, after `done` whole cycles) starts: counted by every rank,
/// or, where rank 0's clock decides (`elapsed` is given there), broadcast from rank 0.
fn another_cycle(
    world: &SimpleCommunicator,
    soak: &Soak,
    done: u64,
    elapsed: Option<std::time::Duration>,
) -> bool {
    let mine = soak.another(done, elapsed.unwrap_or_default());
    if !soak.lead_decides() {
        return mine;
    }
    let mut word = u8::from(mine);
    world.process_at_rank(0).broadcast_into(&mut word);
    word == 1
}

/// Rank 0: the results folder, the console, and every point.
fn lead(
    req: &SweepRequest,
    opts: &SweepOptions,
    plan: &Plan,
    comms: (&SimpleCommunicator, &Groups, &Topology),
    (library, handles): (&Library, &Handles),
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
    let mut meta = Meta::new(
        cmd,
        BackendKind::Mpi.name(),
        BackendKind::Mpi.name(),
        opts.ranks,
        topo.nodes(),
        options,
    );
    meta.library = Some(library.version.clone());
    meta.hosts = topo.hosts.clone();
    meta.rank_nodes = topo.node_of.clone();
    let mut lead = Lead::open(dir, &meta, plan, &req.view)?;
    let dir = lead.dir().to_path_buf();
    interrupt::record(&mut interrupt::writing(), dir, lead.out.meta(), 0);
    let result = lead_points(plan, comms, (&mut lead, handles));
    interrupt::writing().take();
    lead.close(result)
}

/// Rank 0's loop: every point of every cycle.
fn lead_points(
    plan: &Plan,
    (world, groups, topo): (&SimpleCommunicator, &Groups, &Topology),
    (lead, handles): (&mut Lead, &Handles),
) -> Result<()> {
    let mut bufs: Vec<MpiBuffers> = Vec::new();
    let began = std::time::Instant::now();
    for cycle in 0u64.. {
        if cycle > 0 && !another_cycle(world, &plan.soak, cycle, Some(began.elapsed())) {
            return Ok(());
        }
        for point in &plan.points {
            lead_point(
                &point.in_cycle(cycle),
                (world, groups, topo),
                (lead, handles),
                &mut bufs,
            )?;
        }
    }
    Ok(())
}

/// Rank 0's part of one point: measured, gathered, summarised (a row per running group of a
/// split), written and printed.
fn lead_point(
    point: &Point,
    (world, groups, topo): (&SimpleCommunicator, &Groups, &Topology),
    (lead, handles): (&mut Lead, &Handles),
    bufs: &mut Vec<MpiBuffers>,
) -> Result<()> {
    let root = world.process_at_rank(0);
    lead.console.running(&point.describe());
    super::stall::at(&point.describe());
    let payload = point_payload(world, groups, point, (bufs, handles))?;
    let mut all = vec![0u64; payload.len() * world.size() as usize];
    root.gather_into_root(&payload[..], &mut all[..]);
    let calls = point.calls();
    let width = payload.len() / calls.len().max(1);
    let rows = (point.rows(BackendKind::Mpi.name()).into_iter())
        .map(|(i, members, key)| {
            let call = calls.get(i).copied().unwrap_or(point);
            let part = call_part(&all, payload.len(), (i, width));
            // The calls at once carry the point's soak cycle (`Point::in_cycle`).
            row_of(call, topo, (&part, width), &members, key)
        })
        .collect::<Result<Vec<PointRow>>>()?;
    let shown = {
        // The signal handler sees whole points only: it waits for this lock.
        let mut guard = interrupt::writing();
        let shown = lead.append_rows(rows)?;
        let dir = lead.dir().to_path_buf();
        interrupt::record(&mut guard, dir, lead.out.meta(), lead.out.points());
        shown
    };
    lead.show_rows(&shown);
    Ok(())
}

/// Every rank's words of call `i` of a point (`width` words each) from the gathered payloads
/// (`len` words each: every call's in turn).
fn call_part(all: &[u64], len: usize, (i, width): (usize, usize)) -> Vec<u64> {
    let part = (all.chunks_exact(len.max(1))).flat_map(|r| r.get(i * width..(i + 1) * width));
    part.flatten().copied().collect()
}

/// The row of global ranks `members` of a point, from every rank's payload (`len` words each).
fn row_of(
    point: &Point,
    topo: &Topology,
    (all, len): (&[u64], usize),
    members: &[usize],
    key: PointKey,
) -> Result<PointRow> {
    let (rank_times, wrongs, loops) = samples_of(all, len, members).ok_or_else(|| {
        Error::Rank(format!(
            "a rank of {} sent no samples (its communicator is missing)",
            point.describe()
        ))
    })?;
    let mut row = summarize_members(key, point, (topo, members), &rank_times, &wrongs)?;
    row.0.loop_time_us = loop_time_of(&loops, point.timing.rank);
    Ok(row)
}
