//! NCCL Inspector's collectives as results folders: one per communicator and collective, one
//! point per message size, each instance of the call (its `coll_sn`) one sample whose time is
//! the slowest reporting rank's, as collbench's own iterations. Pure.
//!
//! Sizes follow nccl-tests, as Inspector's own bandwidths do (inspector.cc,
//! `inspectorComputeOpBw`): `coll_msg_size_bytes` is the count times the type's size, the
//! whole buffer for AllReduce, Broadcast and Reduce and one rank's block for AllGather and
//! ReduceScatter, so `S` is the message times the ranks there. Inspector records no element
//! type, reduction, root or placement: the type is `--dtype`, and the rest is said in the notes.

use std::collections::BTreeMap;

use super::convert::Converted;
use super::inspector::{CommHeader, Instance, Series};
use crate::collective::{Algo, DType, Op, ReduceOp};
use crate::meta::{ImportInfo, Meta};
use crate::model::call::BackendKind;
use crate::model::record::{IterSample, PointKey, PointRecord};
use crate::sweep::summarize::record_of;

/// A communicator: its header (rank 0's, or the first seen) and each rank's host.
pub struct Comm<'a> {
    pub header: &'a CommHeader,
    pub hosts: BTreeMap<usize, String>,
    pub version: &'a str,
}

/// What every folder of one import shares.
pub struct Common<'a> {
    pub dtype: DType,
    pub source: &'a str,
    pub command_line: &'a [String],
}

/// The ops Inspector's sizes are known for, by NCCL's function name.
fn op_of(coll: &str) -> Option<Op> {
    [
        Op::AllReduce,
        Op::AllGather,
        Op::ReduceScatter,
        Op::Broadcast,
        Op::Reduce,
    ]
    .into_iter()
    .find(|op| op.nccl_function().strip_prefix("nccl") == Some(coll))
}

/// One folder per collective of `comm`; the functions left out, and why, in `skipped`.
pub fn convert_comm(
    comm: &Comm,
    series: &BTreeMap<(String, u64), Series>,
    common: &Common,
    skipped: &mut Vec<String>,
) -> Vec<Converted> {
    let mut by_op: BTreeMap<Op, Converted> = BTreeMap::new();
    for ((coll, msg), s) in series {
        let Some(op) = op_of(coll) else {
            skipped.push(format!(
                "{coll}: not a collective whose sizes collbench knows"
            ));
            continue;
        };
        let out = by_op.entry(op).or_insert_with(|| folder(comm, op, common));
        match point(comm.header, op, *msg, s, common.dtype) {
            Ok((rec, samples, notes)) => {
                out.records.push(rec);
                out.samples.push(samples);
                if let Some(info) = out.meta.import.as_mut() {
                    info.notes.extend(notes);
                }
            }
            Err(why) => out.warnings.push(format!("{coll} of {msg} bytes: {why}")),
        }
    }
    let mut folders: Vec<Converted> = by_op.into_values().collect();
    for f in &mut folders {
        let order = |r: &PointRecord| r.key.bytes;
        let mut pairs: Vec<_> = f.records.drain(..).zip(f.samples.drain(..)).collect();
        pairs.sort_by_key(|(r, _)| order(r));
        (f.records, f.samples) = pairs.into_iter().unzip();
    }
    folders
}

/// An empty folder of `op` on `comm`.
fn folder(comm: &Comm, op: Op, common: &Common) -> Converted {
    let h = comm.header;
    let name = h.comm_name.clone().unwrap_or_else(|| "unknown".into());
    let settings: BTreeMap<String, String> = [
        ("communicator id".to_string(), h.id.clone()),
        ("comm_name".to_string(), name),
    ]
    .into();
    let options = serde_json::json!({ "imported": true, "settings": settings });
    let mut meta = Meta::new(
        common.command_line.to_vec(),
        BackendKind::Nccl.name(),
        "unknown",
        h.n_ranks,
        h.nnodes,
        options,
    );
    if comm.hosts.len() == h.n_ranks {
        let mut hosts: Vec<String> = Vec::new();
        for host in comm.hosts.values() {
            if !hosts.contains(host) {
                hosts.push(host.clone());
            }
        }
        meta.rank_nodes = (comm.hosts.values())
            .map(|host| hosts.iter().position(|h| h == host).unwrap_or(0))
            .collect();
        meta.hosts = hosts;
    }
    meta.import = Some(info(comm, op, common, settings));
    meta.timing = None;
    Converted {
        op,
        meta,
        records: Vec::new(),
        samples: Vec::new(),
        warnings: Vec::new(),
    }
}

fn info(comm: &Comm, op: Op, common: &Common, settings: BTreeMap<String, String>) -> ImportInfo {
    let notes = vec![format!(
        "NCCL Inspector records no element type, reduction, root or placement: the type is \
         --dtype {}, {}out of place assumed",
        common.dtype,
        if op.rooted() {
            "root 0 and "
        } else if op.reduces() {
            "sum and "
        } else {
            ""
        }
    )];
    ImportInfo {
        tool: "nccl-inspector".into(),
        tool_version: Some(comm.version.to_string()),
        test: op.nccl_function().trim_start_matches("nccl").to_string(),
        source: common.source.to_string(),
        lines: [0, 0],
        per_iteration_samples: true,
        time_statistic: "each call's (coll_sn's) coll_exec_time_us, the slowest reporting \
                         rank's, in whole microseconds (Inspector's resolution)"
            .into(),
        algo_from: "unknown".into(),
        settings,
        root: None,
        checked: false,
        max_error: None,
        bandwidth_mismatches: 0,
        truncated: false,
        notes,
    }
}

type Point = (PointRecord, Vec<IterSample>, Vec<String>);

/// One message size of one collective: every instance a sample; instances some ranks did not
/// report, and instances of 0 µs (below Inspector's resolution), said in the notes.
fn point(h: &CommHeader, op: Op, msg: u64, s: &Series, dtype: DType) -> Result<Point, String> {
    let world = h.n_ranks;
    let bytes = match op {
        Op::AllGather | Op::ReduceScatter => msg.checked_mul(world as u64),
        _ => Some(msg),
    }
    .and_then(|b| usize::try_from(b).ok())
    .ok_or_else(|| format!("{msg} bytes on {world} ranks overflows"))?;
    if msg % dtype.size() as u64 != 0 {
        return Err(format!(
            "{msg} bytes is not a whole number of {dtype} elements; give the job's --dtype"
        ));
    }
    let samples: Vec<IterSample> = s.instances.values().filter_map(sample).collect();
    let key = PointKey {
        backend: BackendKind::Nccl.name().into(),
        op,
        algo: Algo::Auto,
        dtype,
        redop: ReduceOp::Sum,
        world,
        nodes: h.nnodes,
        bytes,
        count: bytes / dtype.size(),
        in_place: false,
        proto: None,
        root: op.rooted().then_some(0),
        comm: Default::default(),
        traffic: None,
        group: None,
        concurrent: None,
    };
    let rec = record_of(key, 0, &samples, world, 0)
        .ok_or("every call took 0 us (below Inspector's resolution)")?;
    crate::report::summary_csv::check_point(&rec)?;
    let mut notes = Vec::new();
    let partial = s.instances.values().filter(|i| i.len() < world).count();
    let zero = s.instances.len() - samples.len();
    let size = crate::units::format_size(bytes);
    if partial > 0 {
        notes.push(format!(
            "{op} {size}: {partial} of {} calls reported by fewer than all {world} ranks (their \
             slowest reporting rank's time kept)",
            s.instances.len()
        ));
    }
    if zero > 0 {
        notes.push(format!(
            "{op} {size}: {zero} calls of 0 us on every rank left out"
        ));
    }
    Ok((rec, samples, notes))
}

/// An instance as a sample: the slowest rank's time (the lowest such rank), the fastest's;
/// `None` where every rank's time is 0.
fn sample(i: &Instance) -> Option<IterSample> {
    let mut slowest: Option<(usize, f64)> = None;
    for (&rank, &t) in i {
        if slowest.map_or(true, |(_, max)| t > max) {
            slowest = Some((rank, t));
        }
    }
    let (rank, max) = slowest?;
    let min = i.values().copied().fold(max, f64::min);
    (max > 0.0).then_some(IterSample {
        time_us: max,
        slowest_rank: rank,
        fastest_us: min,
    })
}
