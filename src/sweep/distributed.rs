//! A sweep across hosts, when collbench was started once per rank by mpirun, srun or torchrun:
//! the ranks join through rank 0's store, connect over TCP, and walk the same plan. Rank 0
//! coordinates: before each point it tells every rank to start (so the previous point is on
//! disk first), measures as a member of every group, gathers the members' per-iteration times
//! and wrong counts, and writes and prints the point exactly as a local launch does.
//!
//! A rank that fails exits, which closes its connections: ranks waiting on it fail at once,
//! naming it and its address; a rank that stalls is named by the transport's timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::backend::host::transport::Transport;
use crate::error::{Error, Result};
use crate::launch::env::Bootstrap;
use crate::meta::Meta;
use crate::model::call::BackendKind;
use crate::model::plan::{Plan, Point, SweepOptions, TransportKind};
use crate::model::record::{PointRecord, RankSummary};
use crate::model::topology::{Topology, WorldShape};
use crate::report::pairs_csv::PairRow;
use crate::report::run_dir::run_dir_or_default;
use crate::stats::loop_time_of;
use crate::sweep::bisect_run;
use crate::sweep::cluster::{self, Cluster};
use crate::sweep::distributed_point::{
    group_of, member_part, run_point, start_limit, wait_start, SOAK_OVER,
};
use crate::sweep::lead::{Lead, Outcome};
use crate::sweep::links;
use crate::sweep::rank::RankBuffers;
use crate::sweep::request::SweepRequest;
use crate::sweep::summarize::summarize_point;

/// Runs this rank's part of a multi-host sweep. Rank 0 returns the outcome; the others `None`.
pub fn run_distributed(req: &SweepRequest, boot: &Bootstrap) -> Result<Option<Outcome>> {
    req.backend.availability().map_err(Error::Usage)?;
    if req.ranks_given && req.opts.ranks != boot.world {
        return Err(Error::usage(format!(
            "--ranks {} but {} started {} ranks; drop --ranks when a launcher starts collbench",
            req.opts.ranks,
            boot.launcher.name(),
            boot.world
        )));
    }
    let mut opts = req.opts.clone();
    opts.ranks = boot.world;
    let fingerprint = format!(
        "{}|{:?}",
        serde_json::to_string(&opts).unwrap_or_default(),
        req.world_specs
    );
    let abort = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&abort);
    // An error means a handler is already installed (a second sweep in one process): keep it.
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    if let (Some(flag), false) = (req.node_mode(), req.world_specs.is_empty()) {
        return Err(Error::usage(format!(
            "{flag} measures one rank on each node; drop --world-sizes"
        )));
    }
    if req.bisect && opts.soak.is_soak() {
        return Err(Error::usage(
            "--bisect measures each group once; drop --cycles and --duration",
        ));
    }
    let shm = opts.transport == TransportKind::Shm;
    let mut cluster = cluster::join(boot, &fingerprint, req.timeout, Arc::clone(&abort), shm)?;
    if req.pairs || req.bisect {
        // A bisection's groups are measured at the point a pair would be, resized.
        opts.pairs = node_pairs(&cluster.topology)?;
        opts.world_sizes = vec![2];
    } else {
        opts.shapes = cluster.topology.resolve(&req.world_specs)?;
        opts.world_sizes = opts.shapes.iter().map(WorldShape::world).collect();
    }
    opts.validate()?;
    let plan = opts.plan();
    if plan.points.is_empty() {
        return Err(Error::usage("nothing to measure: no point in the plan"));
    }
    let result = match (cluster.rank, req.bisect) {
        (0, _) => lead(req, &opts, &plan, &mut cluster, &abort).map(Some),
        (_, false) => follow(req, &plan, &mut cluster, &abort).map(|()| None),
        (_, true) => bisect_follow(&plan, &mut cluster, req.timeout, &abort).map(|()| None),
    };
    match result {
        Ok(outcome) => cluster.finish().map(|()| outcome),
        Err(e) => {
            cluster.report_failure(&e);
            Err(e)
        }
    }
}

/// Every pair of nodes, in order.
fn node_pairs(topo: &Topology) -> Result<Vec<(usize, usize)>> {
    let n = topo.nodes();
    if n < 2 {
        return Err(Error::usage(format!(
            "--pairs needs ranks on at least two nodes; all {} ranks are on {}",
            topo.ranks(),
            topo.hosts[0]
        )));
    }
    Ok((0..n)
        .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
        .collect())
}

/// A rank other than 0: wait for each point's start, measure if a member, send the results;
/// in every cycle of a soak, until the cycles are counted out or rank 0 says the soak is over.
fn follow(req: &SweepRequest, plan: &Plan, c: &mut Cluster, abort: &AtomicBool) -> Result<()> {
    let mut bufs = RankBuffers::default();
    let t = &mut c.transport;
    let mut prev = None;
    let soak = req.opts.soak;
    let mut k = 0;
    for cycle in 0u64.. {
        let counted = !soak.lead_decides();
        if cycle > 0
            && counted
            && !soak.another_counted(cycle, Duration::ZERO, plan.points.len(), 63)
        {
            break;
        }
        for point in &plan.points {
            let started = wait_start(t.tcp(), k, start_limit(prev, req.timeout));
            if !started.map_err(|e| interrupted(e, abort))? {
                return Ok(());
            }
            if let Some(g) = group_of(&c.topology, point, c.rank) {
                member_part(t, &g, point, &mut bufs).map_err(|e| interrupted(e, abort))?;
            }
            prev = Some(point);
            k += 1;
        }
    }
    Ok(())
}

/// Rank 0: the results folder, the console, and every point.
fn lead(
    req: &SweepRequest,
    opts: &SweepOptions,
    plan: &Plan,
    c: &mut Cluster,
    abort: &AtomicBool,
) -> Result<Outcome> {
    let dir = run_dir_or_default(req.out.as_deref(), &opts.ops, req.backend.name())?;
    let topo = &c.topology;
    let shared = (0..topo.nodes()).any(|n| topo.ranks_on(n).len() > 1);
    let transport = match opts.transport {
        TransportKind::Shm if shared => "shm+tcp",
        _ => "tcp",
    };
    let mut meta = Meta::new(
        req.command_line.clone(),
        BackendKind::Host.name(),
        transport,
        opts.ranks,
        c.topology.nodes(),
        crate::sweep::run::host_options_json(opts),
    );
    meta.hosts = c.topology.hosts.clone();
    meta.rank_nodes = c.topology.node_of.clone();
    let mut lead = Lead::open(dir, &meta, plan, &req.view)?;
    let result = match req.pairs {
        false => Ok(()),
        true => lead.out.add_pairs(),
    };
    let result = result
        .and_then(|()| match req.bisect {
            false => lead_points(plan, c, &mut lead, req),
            true => {
                let template = bisect_template(plan)?;
                bisect_run::lead(&template, c, &mut lead, req.timeout)
            }
        })
        .map_err(|e| interrupted(e, abort))
        .map_err(|e| name_the_dead(e, c));
    lead.close(result)
}

/// Rank 0's loop: start, measure, gather, write, print, in every cycle of a soak.
fn lead_points(plan: &Plan, c: &mut Cluster, lead: &mut Lead, req: &SweepRequest) -> Result<()> {
    let mut bufs = RankBuffers::default();
    let mut pairs = Vec::new();
    let mut node_times = Vec::new();
    let (soak, began, n) = (req.opts.soak, std::time::Instant::now(), plan.points.len());
    let mut k = 0;
    for cycle in 0u64.. {
        if cycle > 0 && !soak.another_counted(cycle, began.elapsed(), n, 63) {
            if soak.lead_decides() {
                for r in 1..c.transport.nranks() {
                    c.transport.tcp().send(r, &SOAK_OVER.to_le_bytes())?;
                }
            }
            break;
        }
        for point in &plan.points {
            let point = &point.in_cycle(cycle);
            let (rec, row, per_rank) = lead_point(c, k, point, (&mut bufs, lead), req.timeout)?;
            if let Some(row) = row {
                pairs.push(pair_bandwidth(point, &row, rec.busbw_gbps));
            } else if point.nodes > 1 {
                node_times.extend(links::node_ratios(&per_rank, rec.time_us_median));
            }
            k += 1;
        }
    }
    let standings = links::standings(&links::largest_sizes(&pairs));
    for line in links::report(&standings, &c.topology.hosts) {
        lead.console.note(&line);
    }
    if let Some(line) = links::node_summary(&node_times, &c.topology.hosts) {
        lead.console.note(&line);
    }
    Ok(())
}

/// Rank 0's part of one point: measured, gathered, summarised, written and printed; its
/// record, its `--pairs` row and its ranks.
fn lead_point(
    c: &mut Cluster,
    k: usize,
    point: &Point,
    (bufs, lead): (&mut RankBuffers, &mut Lead),
    timeout: Duration,
) -> Result<(PointRecord, Option<PairRow>, Vec<RankSummary>)> {
    lead.console.running(&point.describe());
    let during = |e: Error| match e {
        Error::Rank(m) => Error::Rank(format!("{m} during {}", point.describe())),
        e => e,
    };
    let (members, rank_times, wrongs, loops) =
        run_point(c, k, point, bufs, timeout).map_err(during)?;
    let key = point.key(BackendKind::Host.name());
    let (mut rec, samples, mut per_rank) = summarize_point(key, point, &rank_times, &wrongs)?;
    rec.loop_time_us = loop_time_of(&loops, point.timing.rank);
    for (s, &global) in per_rank.iter_mut().zip(&members) {
        s.global_rank = global;
        s.node = c.topology.node_of[global];
    }
    let row = pair_row(&c.topology, point, &members);
    match &row {
        Some(row) => lead.pair_point(&rec, &samples, &per_rank, row)?,
        None => lead.point(&rec, &samples, &per_rank)?,
    }
    Ok((rec, row, per_rank))
}

/// One pair's bandwidth at one point, for the slow-link report.
fn pair_bandwidth(point: &Point, row: &PairRow, busbw_gbps: f64) -> links::PairBandwidth {
    let c = &point.call;
    links::PairBandwidth {
        curve: format!("{} {} {} {}", c.op, c.algo, c.dtype, point.in_place),
        a: row.node_a,
        b: row.node_b,
        bytes: c.shape.bytes,
        busbw_gbps,
    }
}

/// The pairs.csv row of a `--pairs` point (its `point` is filled in by the results folder).
fn pair_row(topo: &Topology, point: &Point, members: &[usize]) -> Option<PairRow> {
    let (a, b) = point.pair?;
    Some(PairRow {
        point: 0,
        node_a: a,
        node_b: b,
        host_a: topo.hosts[a].clone(),
        host_b: topo.hosts[b].clone(),
        rank_a: members[0],
        rank_b: members[1],
    })
}

/// Puts the rank to blame in front of rank 0's own view of a failure: a rank that died (a
/// death makes the neighbours fail too, and rank 0 may have seen a neighbour's exit first), else
/// the rank the others timed out waiting for ([`crate::sweep::blame`]), as they reported.
fn name_the_dead(e: Error, c: &Cluster) -> Error {
    let Error::Rank(msg) = e else { return e };
    match c.explain(&msg, Duration::from_millis(500)) {
        Some(cause) => Error::Rank(format!("{cause}; {msg}")),
        None => Error::Rank(msg),
    }
}

/// A transport error caused by Ctrl-C becomes an interruption.
fn interrupted(e: Error, abort: &AtomicBool) -> Error {
    if abort.load(Ordering::SeqCst) {
        Error::Interrupted(format!("stopped by a signal ({e})"))
    } else {
        e
    }
}

/// The point a bisection's groups are measured at.
fn bisect_template(plan: &Plan) -> Result<Point> {
    bisect_run::template(plan)
        .ok_or_else(|| Error::usage("nothing to measure: no point in the plan"))
}

/// A rank other than 0 of a bisection.
fn bisect_follow(
    plan: &Plan,
    c: &mut Cluster,
    timeout: Duration,
    abort: &AtomicBool,
) -> Result<()> {
    let template = bisect_template(plan)?;
    bisect_run::follow(&template, c, timeout).map_err(|e| interrupted(e, abort))
}
