//! NCCL Inspector's logs (NVIDIA/nccl plugins/profiler/inspector, output format v4.0): one
//! compact JSON object per line, in one `<host>-pid<pid>.log` file per process, each object one
//! completed collective of one communicator on one rank: `header` (`id`, the communicator's
//! hash; `comm_name`; `rank`; `n_ranks`; `nnodes`), `metadata` (`inspector_output_format_version`,
//! `hostname`, `pid`, ...) and `coll_perf` (`coll`, NCCL's function name; `coll_sn`, the call's
//! sequence number in the communicator; `coll_msg_size_bytes`, the count times the type's size;
//! `coll_exec_time_us`, whole microseconds; `coll_timing_source` and bandwidths, not read). Point-to-point
//! objects (`p2p_perf`) are counted and left out. Parsing is pure; the caller reads the files.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ParseError;

/// One collective of one communicator as one rank saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct InspectorColl {
    pub comm: CommHeader,
    pub hostname: String,
    pub version: String,
    /// NCCL's name of the function (`AllReduce`, `AllGather`, ...).
    pub coll: String,
    pub sn: u64,
    pub msg_bytes: u64,
    /// Microseconds: whole in NVIDIA's plugin (`jsonUint64`); read as any number, since
    /// builds that print it with a decimal point exist.
    pub exec_time_us: f64,
}

/// A communicator as a rank's header names it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct CommHeader {
    pub id: String,
    #[serde(default)]
    pub comm_name: Option<String>,
    pub rank: usize,
    pub n_ranks: usize,
    pub nnodes: usize,
}

/// What a file held.
#[derive(Debug, Default)]
pub struct InspectorFile {
    pub colls: Vec<InspectorColl>,
    /// Point-to-point objects, left out.
    pub p2p: usize,
}

#[derive(Deserialize)]
struct Line {
    header: CommHeader,
    metadata: Metadata,
    #[serde(default)]
    coll_perf: Option<CollPerf>,
    #[serde(default)]
    p2p_perf: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Metadata {
    inspector_output_format_version: String,
    #[serde(default)]
    hostname: String,
}

#[derive(Deserialize)]
struct CollPerf {
    coll: String,
    coll_sn: u64,
    coll_msg_size_bytes: u64,
    coll_exec_time_us: f64,
}

/// The most ranks a communicator may have (as every other reader of ranks).
pub const MAX_RANKS: usize = 1 << 20;

/// The largest message (docs/FORMATS.md, "Physical ranges": bytes of a call).
const MAX_BYTES: u64 = 1 << 40;

/// Whether `text` looks like an Inspector log: its first non-empty line is a JSON object with
/// a `header` and a `metadata`.
pub fn looks_like_inspector(text: &str) -> bool {
    let first = text.lines().find(|l| !l.trim().is_empty());
    first.is_some_and(|l| serde_json::from_str::<Line>(l.trim()).is_ok())
}

/// Every object of a file; the first line that is not one is the error, naming it.
pub fn parse(text: &str) -> Result<InspectorFile, ParseError> {
    let mut out = InspectorFile::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let at = |msg: String| ParseError { line: i + 1, msg };
        let obj: Line = serde_json::from_str(line).map_err(|e| {
            at(format!(
                "not an NCCL Inspector object (a JSON object with header, metadata and \
                 coll_perf or p2p_perf on one line): {e}"
            ))
        })?;
        check_header(&obj.header).map_err(at)?;
        match (obj.coll_perf, obj.p2p_perf) {
            (Some(c), _) => out
                .colls
                .push(coll(obj.header, obj.metadata, c).map_err(at)?),
            (None, Some(_)) => out.p2p += 1,
            (None, None) => return Err(at("an object with neither coll_perf nor p2p_perf".into())),
        }
    }
    Ok(out)
}

fn check_header(h: &CommHeader) -> Result<(), String> {
    if h.n_ranks == 0 || h.n_ranks > MAX_RANKS {
        return Err(format!(
            "header n_ranks {} is outside 1..={MAX_RANKS}",
            h.n_ranks
        ));
    }
    if h.rank >= h.n_ranks {
        return Err(format!(
            "header rank {} is not below n_ranks {}",
            h.rank, h.n_ranks
        ));
    }
    if h.nnodes == 0 || h.nnodes > h.n_ranks {
        return Err(format!(
            "header nnodes {} is outside 1..=n_ranks ({})",
            h.nnodes, h.n_ranks
        ));
    }
    if h.id.is_empty() || h.id.len() > 64 {
        return Err(format!("header id '{}' is not a communicator hash", h.id));
    }
    Ok(())
}

fn coll(comm: CommHeader, meta: Metadata, c: CollPerf) -> Result<InspectorColl, String> {
    let version = meta.inspector_output_format_version;
    if !version.starts_with("v4.") {
        return Err(format!(
            "inspector_output_format_version {version}: collbench reads v4.x (NCCL 2.28+)"
        ));
    }
    if c.coll_msg_size_bytes == 0 || c.coll_msg_size_bytes > MAX_BYTES {
        return Err(format!(
            "coll_msg_size_bytes {} is outside 1..={}",
            c.coll_msg_size_bytes, MAX_BYTES
        ));
    }
    let t = c.coll_exec_time_us;
    if !(t.is_finite() && (0.0..=1e12).contains(&t)) {
        return Err(format!("coll_exec_time_us {t} is outside 0..=1e12"));
    }
    Ok(InspectorColl {
        comm,
        hostname: meta.hostname,
        version,
        coll: c.coll,
        sn: c.coll_sn,
        msg_bytes: c.coll_msg_size_bytes,
        exec_time_us: c.coll_exec_time_us,
    })
}

/// One instance of a collective (its `coll_sn`) across the ranks that reported it: each rank's
/// time, in rank order.
pub type Instance = BTreeMap<usize, f64>;

/// A communicator's collectives of one function and size: every instance by sequence number.
#[derive(Debug, Default)]
pub struct Series {
    pub instances: BTreeMap<u64, Instance>,
}

/// The collectives of every file grouped by communicator (`id`), function and message size.
pub type Grouped = BTreeMap<String, BTreeMap<(String, u64), Series>>;

/// Groups `colls`; a communicator whose ranks disagree on its size is an error naming it.
pub fn group(colls: &[InspectorColl]) -> Result<Grouped, String> {
    let mut sizes: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut out = Grouped::new();
    for c in colls {
        let shape = (c.comm.n_ranks, c.comm.nnodes);
        let seen = *sizes.entry(&c.comm.id).or_insert(shape);
        if seen != shape {
            return Err(format!(
                "communicator {} is {} ranks on {} nodes in one line and {} on {} in another",
                c.comm.id, seen.0, seen.1, shape.0, shape.1
            ));
        }
        let series = out.entry(c.comm.id.clone()).or_default();
        let s = series.entry((c.coll.clone(), c.msg_bytes)).or_default();
        s.instances
            .entry(c.sn)
            .or_default()
            .insert(c.comm.rank, c.exec_time_us);
    }
    Ok(out)
}
