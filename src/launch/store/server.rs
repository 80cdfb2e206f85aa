//! Rank 0's side of the store: an accepting thread and one thread per connected rank, sharing
//! one state under a mutex; waiting operations sleep on a condition variable that every change
//! (a value set, a rank arriving or vanishing, shutdown) wakes.

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

pub(super) mod accept;
pub(super) mod refusal;
pub(super) mod session;

use super::proto;
use super::{describe_ranks, MAX_TOKEN};
use crate::error::{Error, Result};
use crate::launch::peers::Refusals;

/// How long a dropped server lets replies already computed reach their ranks.
const LINGER: Duration = Duration::from_secs(1);

/// The rendezvous store, served from background threads until dropped.
pub struct StoreServer {
    shared: Arc<Shared>,
    listener: Arc<TcpListener>,
    local: SocketAddr,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    world: usize,
    token: Vec<u8>,
    /// Bounds the hello and every read or write once a message has started.
    timeout: Duration,
    stop: AtomicBool,
    state: Mutex<State>,
    changed: Condvar,
    /// Admitted ranks' connections (at most one per rank).
    conns: Mutex<Vec<Conn>>,
    refused: Mutex<Refusals>,
}

struct Conn {
    stream: TcpStream,
    thread: JoinHandle<()>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Presence {
    Never,
    Connected,
    /// Said goodbye.
    Left,
    /// Vanished, and why.
    Lost(String),
}

struct State {
    presence: Vec<Presence>,
    kv: HashMap<String, Vec<u8>>,
    /// Gathers and barriers by (op, name).
    groups: HashMap<(u8, String), Group>,
    stopping: bool,
    /// Gets waiting for a key right now (the tests wait for one before they stop the store).
    getting: usize,
}

/// Successive calls of one gather or barrier name: each rank's k-th call joins round k.
struct Group {
    next: Vec<u64>,
    rounds: HashMap<u64, Round>,
}

struct Round {
    values: Vec<Option<Vec<u8>>>,
    arrived: usize,
    result: Option<Arc<Vec<Vec<u8>>>>,
    /// Ranks that have taken the result; the round is dropped when all have.
    taken: usize,
}

impl State {
    /// Why rank `r` cannot take part any more, if it cannot.
    fn gone(&self, r: usize) -> Option<String> {
        match &self.presence[r] {
            Presence::Left => Some(format!("rank {r} left the store (it closed its client)")),
            Presence::Lost(why) => Some(format!("rank {r} {why}")),
            _ => None,
        }
    }

    /// The first rank that vanished without saying goodbye.
    fn first_lost(&self) -> Option<String> {
        (0..self.presence.len())
            .find(|&r| matches!(self.presence[r], Presence::Lost(_)))
            .and_then(|r| self.gone(r))
    }

    /// Which of `missing` never connected (and whether a peer claiming one was refused, and
    /// why) and which are connected but elsewhere.
    fn describe_missing(&self, missing: &[usize], refused: &Refusals) -> String {
        let (never, busy): (Vec<usize>, Vec<usize>) = missing
            .iter()
            .partition(|&&r| self.presence[r] == Presence::Never);
        let mut parts = Vec::new();
        if !never.is_empty() {
            parts.push(format!(
                "{} never connected{}",
                describe_ranks(&never),
                refused.notes_for(&never)
            ));
        }
        if !busy.is_empty() {
            parts.push(format!(
                "{} connected but did not arrive",
                describe_ranks(&busy)
            ));
        }
        parts.join("; ")
    }
}

impl StoreServer {
    /// Listens on `addr` (`0.0.0.0:29517`, a specific interface, or port 0 for any free port)
    /// for the `world` ranks holding `token`, and serves them from background threads.
    /// `timeout` bounds each hello and each message once it has started.
    pub fn bind(addr: &str, token: &[u8], world: usize, timeout: Duration) -> Result<StoreServer> {
        if world == 0 || world > u32::MAX as usize {
            return Err(Error::usage(format!(
                "a store serves 1 to {} ranks, not {world}",
                u32::MAX
            )));
        }
        if token.len() > MAX_TOKEN {
            return Err(Error::usage(format!(
                "a store token is at most {MAX_TOKEN} bytes"
            )));
        }
        let listener = TcpListener::bind(addr).map_err(|source| Error::Os {
            what: format!(
                "binding the rendezvous store to {addr} (if another job holds the port, set \
                 COLLBENCH_STORE_ADDR=host:port with another port)"
            ),
            source,
        })?;
        let local = listener.local_addr().map_err(|source| Error::Os {
            what: "reading the store's address".into(),
            source,
        })?;
        // The accepting thread polls: it reads hellos side by side and never blocks in accept.
        listener.set_nonblocking(true).map_err(|source| Error::Os {
            what: "setting up the store's listener".into(),
            source,
        })?;
        let shared = Arc::new(Shared {
            world,
            token: token.to_vec(),
            timeout: timeout.max(Duration::from_millis(1)),
            stop: AtomicBool::new(false),
            state: Mutex::new(State {
                presence: vec![Presence::Never; world],
                kv: HashMap::new(),
                groups: HashMap::new(),
                stopping: false,
                getting: 0,
            }),
            changed: Condvar::new(),
            conns: Mutex::new(Vec::new()),
            refused: Mutex::new(Refusals::new("rank 0's store")),
        });
        let listener = Arc::new(listener);
        let (sh, l) = (shared.clone(), listener.clone());
        let acceptor = thread::Builder::new()
            .name("collbench-store".into())
            .spawn(move || accept::accept_loop(&sh, &l))
            .map_err(|source| Error::Os {
                what: "starting the store thread".into(),
                source,
            })?;
        Ok(StoreServer {
            shared,
            listener,
            local,
            acceptor: Some(acceptor),
        })
    }

    /// The address actually bound (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    pub fn world(&self) -> usize {
        self.shared.world
    }

    /// The value some rank set under `key`, if any (rank 0 reading what the others reported).
    pub fn value(&self, key: &str) -> Option<Vec<u8>> {
        self.shared.lock().kv.get(key).cloned()
    }

    /// The ranks whose connection closed without a goodbye: processes that died (a rank that
    /// fails cleanly says goodbye first).
    pub fn lost_ranks(&self) -> Vec<usize> {
        let st = self.shared.lock();
        (0..st.presence.len())
            .filter(|&r| matches!(st.presence[r], Presence::Lost(_)))
            .collect()
    }
}

#[cfg(test)]
impl StoreServer {
    /// The refusal lines logged so far.
    pub(super) fn refusal_lines(&self) -> Vec<String> {
        self.shared.refused().lines.clone()
    }

    /// How many gets wait for a key now.
    pub(super) fn gets_waiting(&self) -> usize {
        self.shared.lock().getting
    }
}

impl Drop for StoreServer {
    /// Stops accepting, fails every waiting operation, lets replies already computed go out
    /// (up to [`LINGER`]), then closes every connection and joins every thread.
    fn drop(&mut self) {
        let sh = &self.shared;
        sh.stop.store(true, Ordering::SeqCst);
        sh.lock().stopping = true;
        sh.changed.notify_all();
        // SAFETY: shutting down our own listening socket; on Linux this wakes a blocked accept().
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        let _ = TcpStream::connect_timeout(&wake_addr(self.local), Duration::from_millis(200));
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
        let conns = std::mem::take(&mut *sh.conns.lock().unwrap_or_else(PoisonError::into_inner));
        for c in &conns {
            let _ = c.stream.shutdown(Shutdown::Read);
        }
        let until = Instant::now() + LINGER;
        while Instant::now() < until && conns.iter().any(|c| !c.thread.is_finished()) {
            thread::sleep(Duration::from_millis(2));
        }
        for c in conns {
            let _ = c.stream.shutdown(Shutdown::Both);
            let _ = c.thread.join();
        }
        let unlogged = sh.refused().unlogged();
        if unlogged > 0 {
            crate::say!("collbench: rank 0's store refused {unlogged} more peers (not logged)");
        }
    }
}

/// Where to connect to wake our own accept(): loopback when bound to every interface.
fn wake_addr(local: SocketAddr) -> SocketAddr {
    let mut a = local;
    if a.ip().is_unspecified() {
        a.set_ip(match a {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refused(&self) -> MutexGuard<'_, Refusals> {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn reply(&self, s: &mut TcpStream, frame: &[u8]) -> std::io::Result<()> {
        proto::write_all_by(s, frame, proto::deadline_after(self.timeout))
    }
}
