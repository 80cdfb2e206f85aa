//! Joining a launch that spans hosts: rank 0 serves the rendezvous store, every rank checks
//! that all were started with the same sweep, publishes its host name and the address of its
//! data listener, and connects to every other rank over TCP with the job's token.
//!
//! Where a rank listens: `COLLBENCH_LISTEN_ADDR` (an IP address of this host) if set, else the
//! address of the interface this host uses to reach the store (found by the kernel's routing,
//! with a connected UDP socket that sends nothing). The listener binds that address only; rank
//! 0's store binds `COLLBENCH_LISTEN_ADDR` too when it is set, else every interface.
//! Which ranks share a node: equal host names, or equal `COLLBENCH_NODE_NAME` where set (for
//! hosts that report the same name, and for several "nodes" on one machine in tests).

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::host::layout::{Layout, Shared};
use crate::backend::host::transport::hybrid::HybridTransport;
use crate::backend::host::transport::shm::ShmTransport;
use crate::backend::host::transport::tcp::TcpTransport;
use crate::backend::host::transport::Transport;
use crate::backend::host::wait::WaitPolicy;
use crate::error::{Error, Result};
use crate::launch::env::{Bootstrap, STORE_ADDR_ENV};
use crate::launch::rendezvous::{listen, missing_token, node_name, store_bind};
use crate::launch::store::{StoreClient, StoreServer};
use crate::model::topology::Topology;

/// A joined launch.
pub struct Cluster {
    pub rank: usize,
    pub transport: HybridTransport,
    pub topology: Topology,
    pub store: StoreClient,
    /// Rank 0 serves the store until the end of the run.
    server: Option<StoreServer>,
}

impl Cluster {
    /// After a clean run: every rank meets at one last barrier and says goodbye; rank 0 stops
    /// its store and then tells every rank over TCP, so that none connects to the next run's
    /// store (a repeat on the same port) while this one still listens.
    pub fn finish(mut self) -> Result<()> {
        self.store.barrier("collbench-end")?;
        self.store.close()?;
        let t = self.transport.tcp();
        if let Some(server) = self.server.take() {
            drop(server);
            for r in 1..t.nranks() {
                t.send(r, &[1])?;
            }
            return Ok(());
        }
        // Others may already have left: wait on rank 0 alone (bounded by the stall timeout).
        t.recv(
            0,
            &mut [0u8],
            crate::backend::host::transport::Combine::Copy,
        )
    }

    /// A rank other than 0, failing with `e`: reports it through the store before this
    /// process exits, so that rank 0 can tell a victim from the cause ([`crate::sweep::blame`]).
    pub fn report_failure(&mut self, e: &Error) {
        if self.server.is_none() {
            crate::sweep::blame::report(&mut self.store, self.rank, e);
        }
    }

    /// Rank 0, after failing with `msg`: the rank to blame and why, where one can be named
    /// ([`crate::sweep::blame::explain`]; the ranks here are not inspected by pid: the
    /// transports already name the peer they waited for).
    pub fn explain(&self, msg: &str, grace: Duration) -> Option<String> {
        let server = Some(self.server.as_ref()?);
        crate::sweep::blame::explain(msg, server, &[], grace, |r| self.describe_rank(r))
    }

    /// "rank 2 (host b)".
    pub fn describe_rank(&self, r: usize) -> String {
        let host = self
            .topology
            .node_of
            .get(r)
            .map(|&n| self.topology.hosts[n].as_str());
        format!("rank {r} (host {})", host.unwrap_or("?"))
    }
}

/// `e`, found alike on every rank of an mpirun or srun launch, said by rank 0 only.
pub fn said_once(e: Error, boot: &Bootstrap) -> Error {
    match boot.launcher {
        crate::launch::env::Launcher::OpenMpi | crate::launch::env::Launcher::Slurm => {
            e.alike_on_every_rank(boot.rank)
        }
        _ => e,
    }
}

/// Joins the launch described by `boot`. `fingerprint` identifies the sweep (every rank must
/// give the same); `timeout` bounds the rendezvous and every later stall; `abort` stops waits.
/// With `shm`, ranks on one node also share a memory segment and use it between themselves.
pub fn join(
    boot: &Bootstrap,
    fingerprint: &str,
    timeout: Duration,
    abort: Arc<AtomicBool>,
    shm: bool,
) -> Result<Cluster> {
    let token = boot
        .token
        .clone()
        .ok_or_else(|| said_once(missing_token(boot), boot))?;
    crate::backend::host::transport::single_copy::CopyMode::from_env()?;
    let store_addr = boot.store_addr().ok_or_else(|| {
        Error::usage(format!(
            "{}: no address for rank 0's store; set MASTER_ADDR and MASTER_PORT, or {STORE_ADDR_ENV}=host:port",
            boot.launcher.name()
        ))
    })?;
    let server = match (boot.rank, store_bind(boot)?) {
        (0, Some(bind)) => Some(StoreServer::bind(&bind, &token, boot.world, timeout)?),
        _ => None,
    };
    let mut store = StoreClient::connect(&store_addr, &token, boot.rank, timeout)?;
    check_same_sweep(&mut store, fingerprint)?;
    let listener = listen(boot)?;
    let me = listener
        .local_addr()
        .map_err(|e| Error::Rank(format!("rank {}: listener address: {e}", boot.rank)))?;
    let entry = format!("{}\n{me}", node_name());
    let entries = store.all_gather("collbench-endpoints", entry.as_bytes())?;
    let (hosts, peers) = parse_endpoints(&entries)?;
    let tcp = TcpTransport::connect(
        boot.rank,
        boot.world,
        listener,
        &peers,
        fold_token(&token),
        timeout,
    )?
    .with_abort(abort);
    let topology = Topology::from_hosts(&hosts);
    let local = match shm {
        true => node_segment(&mut store, &topology, boot, timeout)?,
        false => None,
    };
    if shm {
        // Every segment is mapped by all its ranks before anyone uses one (or exits).
        store.barrier("collbench-shm-mapped")?;
    }
    Ok(Cluster {
        rank: boot.rank,
        transport: HybridTransport::new(tcp, local),
        topology,
        store,
        server,
    })
}

/// The shared-memory transport among the ranks of this rank's node (None when it is alone).
/// The node's lowest rank creates the segment (an anonymous memfd, so nothing is left behind)
/// and publishes its process id and descriptor; the others open it through /proc.
fn node_segment(
    store: &mut StoreClient,
    topo: &Topology,
    boot: &Bootstrap,
    stall: Duration,
) -> Result<Option<(ShmTransport, Vec<usize>)>> {
    let rank = boot.rank;
    let node = topo.node_of[rank];
    let ranks = topo.ranks_on(node);
    if ranks.len() < 2 {
        return Ok(None);
    }
    let layout = Layout::new(ranks.len(), 1);
    let key = format!("collbench-shm-{node}");
    let shared = if rank == ranks[0] {
        let shared = Shared::create(layout)?;
        let at = format!("{} {}", std::process::id(), shared.segment().fd());
        store.set(&key, at.as_bytes())?;
        shared
    } else {
        let at = String::from_utf8_lossy(&store.get(&key)?).into_owned();
        Shared::attach(open_peer_fd(&at, ranks[0])?, layout)?
    };
    let me = ranks.iter().position(|&r| r == rank).unwrap_or(0);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Spin only when this host has a core for every rank on it: the launcher's count of local
    // ranks covers hosts split into several nodes by COLLBENCH_NODE_NAME.
    let on_host = ranks.len().max(boot.local_world.unwrap_or(0));
    let policy = WaitPolicy::for_load(on_host, cores);
    let shm =
        ShmTransport::new(Rc::new(shared), me, policy).with_stall_timeout(stall, ranks.clone());
    Ok(Some((shm, ranks)))
}

/// Opens the descriptor "pid fd" of another process on this host.
fn open_peer_fd(at: &str, owner: usize) -> Result<i32> {
    let path = match at.split_once(' ') {
        Some((pid, fd)) => format!("/proc/{}/fd/{}", pid.trim(), fd.trim()),
        None => {
            return Err(Error::Rank(format!(
                "rank {owner} published a malformed segment '{at}'"
            )))
        }
    };
    let c = std::ffi::CString::new(path.clone())
        .map_err(|_| Error::Rank(format!("bad path {path}")))?;
    // SAFETY: a NUL-terminated path and plain flags; returns a new descriptor or -1.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(Error::os(format!(
            "opening rank {owner}'s shared segment at {path}; run with --transport tcp to use TCP on one host too"
        )));
    }
    Ok(fd)
}

/// Fails, naming the first rank whose sweep differs from rank 0's. The fingerprint travels as
/// its digest: the options may hold a traffic matrix longer than a store value.
fn check_same_sweep(store: &mut StoreClient, fingerprint: &str) -> Result<()> {
    let digest = format!("{:016x}", crate::digest::fnv1a64(fingerprint.as_bytes()));
    let all = store.all_gather("collbench-sweep", digest.as_bytes())?;
    match all.iter().position(|f| f != &all[0]) {
        Some(r) => Err(Error::usage(format!(
            "rank {r} was started with other sweep options than rank 0; start every rank with the same command line"
        ))),
        None => Ok(()),
    }
}

/// Every rank's (host name, listener address), from the gathered `host\naddr` entries.
fn parse_endpoints(entries: &[Vec<u8>]) -> Result<(Vec<String>, Vec<SocketAddr>)> {
    let mut hosts = Vec::with_capacity(entries.len());
    let mut peers = Vec::with_capacity(entries.len());
    for (r, e) in entries.iter().enumerate() {
        let text = String::from_utf8_lossy(e);
        let parsed = text
            .split_once('\n')
            .and_then(|(h, a)| Some((h.to_string(), a.parse::<SocketAddr>().ok()?)));
        let (h, a) = parsed.ok_or_else(|| {
            Error::Rank(format!("rank {r} published a malformed endpoint '{text}'"))
        })?;
        hosts.push(h);
        peers.push(a);
    }
    Ok((hosts, peers))
}

/// The mesh handshake carries 64 bits of the token: all its bytes folded together.
fn fold_token(token: &[u8]) -> u64 {
    token.chunks(8).fold(0u64, |acc, c| {
        let mut word = [0u8; 8];
        word[..c.len()].copy_from_slice(c);
        acc.rotate_left(17) ^ u64::from_be_bytes(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_or_name_the_rank() {
        let ok = vec![b"a\n10.0.0.1:4000".to_vec(), b"b\n[::1]:5".to_vec()];
        let (h, p) = parse_endpoints(&ok).unwrap();
        assert_eq!(h, vec!["a", "b"]);
        assert_eq!(p[1], "[::1]:5".parse::<SocketAddr>().unwrap());
        let bad = vec![ok[0].clone(), b"nohost".to_vec()];
        let e = parse_endpoints(&bad).unwrap_err().to_string();
        assert!(e.contains("rank 1"), "{e}");
    }

    #[test]
    fn token_folding_uses_every_byte() {
        let a = fold_token(&[1; 16]);
        let mut other = [1u8; 16];
        other[15] = 2;
        assert_ne!(a, fold_token(&other));
        assert_ne!(fold_token(&[0, 0, 0, 0, 0, 0, 0, 1]), 0);
    }
}
