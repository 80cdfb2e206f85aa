//! Who an NCCL rank is and how it reaches the others: its rank, world and GPU, its client of
//! rank 0's store (and on rank 0 of a launch across nodes, the store itself), every rank's node,
//! GPU and whereabouts once gathered, and what a failing rank does with its error: a rank other
//! than 0 reports it through the store; rank 0 puts the rank to blame in front of it
//! ([`crate::sweep::blame`]), as the host backend's multi-host launches do, so that the results
//! folder names the rank that stopped, not the first neighbour that noticed.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::launch::store::{StoreClient, StoreServer};
use crate::sweep::whereabouts::Whereabouts;

/// How long rank 0 waits for the others' reports after a failure (they stall at about the
/// same moment: every rank's `--timeout` runs from the same point).
const REPORT_GRACE: Duration = Duration::from_secs(2);

/// Who this rank is and how it reaches the others.
pub struct RankContext {
    pub rank: usize,
    pub world: usize,
    /// The GPU this rank drives (its rank among the ranks of its node).
    pub device: usize,
    pub store: StoreClient,
    /// Where rank 0 writes the results.
    pub out: PathBuf,
    /// Rank 0 of a launch across nodes serves the store; the local launcher serves its own.
    pub server: Option<StoreServer>,
    /// Every rank's node name, once gathered ([`gather_ranks`]).
    hosts: Vec<String>,
    /// Every rank's process, once gathered.
    places: Vec<Whereabouts>,
}

impl RankContext {
    pub fn new(rank: usize, world: usize, device: usize, store: StoreClient, out: PathBuf) -> Self {
        RankContext {
            rank,
            world,
            device,
            store,
            out,
            server: None,
            hosts: Vec::new(),
            places: Vec::new(),
        }
    }

    /// After this rank failed with `e`: reported to rank 0 (other ranks), or with the rank to
    /// blame in front (rank 0). Never fails: the error itself is what the run reports.
    pub fn blame(&mut self, e: Error) -> Error {
        if self.rank != 0 {
            crate::sweep::blame::report(&mut self.store, self.rank, &e);
            return e;
        }
        let Error::Rank(msg) = e else { return e };
        let describe = |r: usize| match self.hosts.get(r) {
            Some(h) => format!("rank {r} (host {h})"),
            None => format!("rank {r}"),
        };
        let server = self.server.as_ref();
        match crate::sweep::blame::explain(&msg, server, &self.places, REPORT_GRACE, describe) {
            Some(cause) => Error::Rank(format!("{cause}; {msg}")),
            None => Error::Rank(msg),
        }
    }
}

/// Every rank's node name and GPU name (`gpu`), in rank order; every rank's node and process
/// are kept in `ctx` for [`RankContext::blame`].
pub(super) fn gather_ranks(ctx: &mut RankContext, gpu: &str) -> Result<(Vec<String>, Vec<String>)> {
    let host = crate::launch::rendezvous::node_name();
    let mine = format!("{host}\n{gpu}\n{}", Whereabouts::mine().encode());
    let all = ctx.store.all_gather("nccl-ranks", mine.as_bytes())?;
    let mut hosts = Vec::with_capacity(all.len());
    let mut gpus = Vec::with_capacity(all.len());
    ctx.places.clear();
    for b in &all {
        let text = String::from_utf8_lossy(b);
        let mut lines = text.splitn(3, '\n');
        hosts.push(lines.next().unwrap_or_default().to_string());
        gpus.push(lines.next().unwrap_or("unknown").to_string());
        ctx.places
            .push(Whereabouts::decode(lines.next().unwrap_or_default()));
    }
    ctx.hosts = hosts.clone();
    Ok((hosts, gpus))
}

/// Names the point a rank's error came from: which op, type and reduction NCCL refused.
pub fn at_point(e: Error, p: &crate::model::plan::Point) -> Error {
    match e {
        Error::Rank(m) => Error::Rank(format!("{m} (at {})", p.describe())),
        e => e,
    }
}

/// Adds the NCCL variables in force to a rank error: a forced algorithm or protocol this system
/// lacks (NVLS without NVSwitch, CollNet without a SHARP network) fails inside NCCL.
pub fn with_env(e: Error, vars: &[(&'static str, Option<String>); 2]) -> Error {
    let set: Vec<String> = vars
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
        .collect();
    match e {
        Error::Rank(m) if !set.is_empty() => Error::Rank(format!(
            "{m} (with {}; drop the --algo or --proto this system lacks)",
            set.join(" ")
        )),
        e => e,
    }
}
