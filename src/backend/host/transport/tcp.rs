//! TCP transport: one connection per pair of ranks, for ranks on different hosts (the NET to
//! shared memory's SHM, as in NCCL). The ring, tree and doubling algorithms run over it
//! unchanged.
//!
//! # The mesh and its handshake
//! Every rank binds a listener first; the launcher shares the addresses; then
//! [`TcpTransport::connect`] dials every lower rank in rank order and accepts every higher one,
//! in whatever order they come. Rank 0 only accepts, so rank 1's dial completes, then rank 1
//! accepts, and so on: a rank waits only on lower ranks, so the waits cannot form a cycle. The
//! kernel completes a connection into the listen backlog before the application accepts it, so
//! a hello sent to a rank that is still dialing simply waits there until it starts accepting.
//!
//! Each connection opens with a fixed 24-byte hello from the dialer (magic and version
//! `CLBTCP01`, the job token, its rank, the number of ranks), answered by the same message from
//! the accepting rank. The acceptor closes any connection whose hello is malformed, carries
//! another token or rank count, or claims a rank that is out of range, not above its own or
//! already connected; the dialer then fails naming the rank it dialed. Pending hellos are read
//! with poll(2) side by side, so a stray connection that says nothing costs nothing but a slot
//! (at most 64 pending, a new one past that closes the oldest; each at most 5 s; running out
//! of descriptors closes the oldest rather than failing the mesh). Every refused connection is
//! logged on stderr with its address and the reason (`collbench: rank 0's TCP mesh refused
//! 10.0.0.7:51234: wrong token (claimed rank 1)`, the first 100 per mesh, peer bytes escaped),
//! and a rank that never comes is reported with the refusal of any peer that claimed it.
//! Nothing from the wire is ever used as a length. The
//! token keeps jobs (and stale ports) apart; it is not authentication against someone who can
//! read the traffic. Everything is bounded by the connect timeout.
//!
//! # Moving data
//! Both directions of [`Transport::send_recv`] progress in one loop over non-blocking sockets:
//! write what the send buffer takes, read what has arrived, and only when neither moved sleep in
//! poll(2) on both descriptors. A ring in which every rank first sent its whole block and only
//! then received would deadlock as soon as a block exceeds what the socket buffers hold; doing
//! both at once keeps every link busy in both directions. Poll sleeps in slices of 50 ms to look
//! at the abort flag; nothing spins.
//!
//! A copy is read straight into the destination. A reduction is read into a reused 256 KiB
//! staging buffer and combined into the destination with the shared kernels; TCP may cut the
//! stream anywhere, so only whole elements are combined and the bytes of a partial element stay
//! at the front of the staging buffer until the rest arrives. The receiver never reads more than
//! the current message still needs, so the next message stays in the kernel's buffer for the
//! next call: no framing beyond the handshake (both sides agree on sizes, as the algorithms
//! guarantee). [`TcpTransport::expect_idle`] checks between calls that no peer sent more.
//!
//! # Socket options
//! TCP_NODELAY: the algorithms send many small messages (barrier tokens, the last bytes of a
//! chunk) and wait for the answer; Nagle's algorithm would hold each for up to a delayed-ACK
//! timeout (40 ms on Linux). Send and receive buffers of 4 MiB are asked for so that a link with
//! a large bandwidth-delay product stays full, but only where `net.core.{w,r}mem_max` grants
//! them in full: a size set by hand turns Linux's autotuning off, and a request clipped to a
//! small limit would do worse than autotuning. [`TcpTransport::buffer_sizes`] reports what the
//! kernel gave.
//!
//! # Errors and limits
//! A peer that closes its connection or whose connection fails gives [`Error::Rank`] naming that
//! rank and its address; one that moves no byte for the transport's timeout gives a timeout
//! naming the rank waited on. A send can complete into the kernel's buffer before the peer's
//! failure is known: it surfaces at the next exchange with that peer. Messages to oneself are
//! not supported (no algorithm sends them). One connection per pair carries one stream in each
//! direction, so a rank moves at most one message per peer and direction at a time, which is
//! all the algorithms ask. Each rank holds p - 1 sockets (mind `ulimit -n` for thousands of
//! ranks) and dials its lower ranks one after another, one round trip each.

mod accept;
#[cfg(test)]
mod fault_tests;
mod flow;
mod hello;
#[cfg(test)]
mod hostile_tests;
mod idle;
mod mesh;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod uneven_tests;

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Incoming, Outgoing, Transport};
use crate::error::{Error, Result};
use flow::{poll, PollSet, Rx, Tx};

/// Longest single sleep in poll(2): how often a waiting rank looks at the abort flag.
const WAKE: Duration = Duration::from_millis(50);

/// Longest sleep while another transport's half of an exchange is pending.
const OTHER_HALF_WAKE: Duration = Duration::from_micros(50);

/// Rounds of looking again (with a yield) before sleeping while the other half is pending.
const OTHER_HALF_YIELDS: u32 = 200;

/// Bytes of the staging buffer reductions are received through.
const STAGING: usize = 256 * 1024;

/// One connected peer.
struct Peer {
    stream: TcpStream,
    /// The address the peer listens on (what the launcher published), for messages.
    addr: SocketAddr,
}

/// The TCP transport of one rank: a connected mesh to every other rank.
pub struct TcpTransport {
    rank: usize,
    peers: Vec<Option<Peer>>,
    timeout: Duration,
    abort: Option<Arc<AtomicBool>>,
    progress: Arc<AtomicU64>,
    /// Staging for reductions, allocated on first use (u64 keeps every dtype aligned).
    staging: Vec<u64>,
}

impl TcpTransport {
    /// Connects `rank` to all `nranks` ranks. `listener` is this rank's bound listener (its
    /// address is `peers[rank]`), `peers` every rank's listening address, `token` the job's
    /// shared secret. `timeout` bounds the whole mesh set-up and, afterwards, how long an
    /// exchange may go without a byte moving.
    pub fn connect(
        rank: usize,
        nranks: usize,
        listener: TcpListener,
        peers: &[SocketAddr],
        token: u64,
        timeout: Duration,
    ) -> Result<TcpTransport> {
        if peers.len() != nranks || rank >= nranks || u32::try_from(nranks).is_err() {
            return Err(Error::usage(format!(
                "TCP mesh: rank {rank} of {nranks} with {} peer addresses",
                peers.len()
            )));
        }
        let streams = mesh::build(rank, &listener, peers, token, timeout)?;
        drop(listener);
        let peers = streams
            .into_iter()
            .zip(peers)
            .map(|(s, &addr)| s.map(|stream| Peer { stream, addr }))
            .collect();
        Ok(TcpTransport {
            rank,
            peers,
            timeout,
            abort: None,
            progress: Arc::new(AtomicU64::new(0)),
            staging: Vec::new(),
        })
    }

    /// Makes every wait stop with an error once `flag` is set (looked at every 50 ms).
    pub fn with_abort(mut self, flag: Arc<AtomicBool>) -> TcpTransport {
        self.abort = Some(flag);
        self
    }

    /// How long an exchange may go without a byte moving.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Changes the stall timeout.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The iterations this rank has completed ([`Transport::mark_progress`]), for a watchdog.
    pub fn progress(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.progress)
    }

    /// The listening address of `rank`, as given to [`connect`](Self::connect).
    pub fn peer_addr(&self, rank: usize) -> Option<SocketAddr> {
        self.peers.get(rank)?.as_ref().map(|p| p.addr)
    }

    /// Send and receive buffer bytes the kernel reports for the connection to `rank` (Linux
    /// reports twice what was asked for; half is its bookkeeping).
    pub fn buffer_sizes(&self, rank: usize) -> Option<(usize, usize)> {
        let p = self.peers.get(rank)?.as_ref()?;
        Some(mesh::buffer_sizes(p.stream.as_raw_fd()))
    }

    /// Fails if any peer has sent bytes that no receive asked for, or has closed its connection.
    /// Meant for between collectives, when every stream should be empty.
    pub fn expect_idle(&self) -> Result<()> {
        let mut byte = [0u8; 1];
        for (j, p) in self.peers.iter().enumerate() {
            let Some(p) = p else { continue };
            // SAFETY: the buffer is live for one byte; MSG_PEEK leaves the data queued.
            let n = unsafe {
                libc::recv(
                    p.stream.as_raw_fd(),
                    byte.as_mut_ptr().cast(),
                    1,
                    libc::MSG_PEEK | libc::MSG_DONTWAIT,
                )
            };
            let what = match n {
                0 => "closed the connection".to_string(),
                n if n > 0 => "sent bytes that no receive asked for".to_string(),
                _ => match io::Error::last_os_error() {
                    e if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                        continue
                    }
                    e => format!("connection failed: {e}"),
                },
            };
            return Err(Error::Rank(format!(
                "rank {}: rank {j} ({}) {what}",
                self.rank, p.addr
            )));
        }
        Ok(())
    }

    /// [`Transport::send_recv`] that also drives `also`, another transport's half of the same
    /// exchange (a hybrid transport's shared-memory side): it returns (moved, finished). While
    /// that half is unfinished, waits are short (50 µs) so it is looked at often.
    pub(crate) fn drive(
        &mut self,
        send: Option<Outgoing<'_>>,
        recv: Option<Incoming<'_, '_>>,
        also: &mut dyn FnMut() -> Result<(bool, bool)>,
    ) -> Result<()> {
        let me = self.rank;
        check_abort(me, self.abort.as_deref())?;
        let mut tx = match send {
            Some((to, data)) => Some(Tx::new(to, peer_of(me, &self.peers, to)?, data)),
            None => None,
        };
        let mut rx = match recv {
            Some((from, out, how)) => {
                Some(Rx::new(from, peer_of(me, &self.peers, from)?, out, how))
            }
            None => None,
        };
        if rx.as_ref().is_some_and(Rx::needs_staging) && self.staging.is_empty() {
            self.staging = vec![0u64; STAGING / 8];
        }
        let staging: &mut [u8] = bytemuck::cast_slice_mut(&mut self.staging);
        let mut last_move = Instant::now();
        let mut idle_rounds = 0u32;
        loop {
            let mut moved = false;
            if let Some(t) = tx.as_mut().filter(|t| t.pending()) {
                moved |= t.advance(me)?;
            }
            if let Some(r) = rx.as_mut().filter(|r| r.pending()) {
                moved |= r.advance(me, staging)?;
            }
            let (other_moved, other_done) = also()?;
            idle_rounds = if moved { 0 } else { idle_rounds + 1 };
            moved |= other_moved;
            let sending = tx.as_ref().filter(|t| t.pending());
            let receiving = rx.as_ref().filter(|r| r.pending());
            if sending.is_none() && receiving.is_none() && other_done {
                return Ok(());
            }
            if moved {
                last_move = Instant::now();
                continue;
            }
            let idle = last_move.elapsed();
            if idle >= self.timeout {
                return Err(stalled(me, self.timeout, sending, receiving));
            }
            let mut fds = PollSet::new();
            if let Some(t) = sending {
                fds.add(t.fd(), libc::POLLOUT);
            }
            if let Some(r) = receiving {
                fds.add(r.fd(), libc::POLLIN);
            }
            let wait = match (other_done, idle_rounds < OTHER_HALF_YIELDS) {
                (true, _) => WAKE,
                // The other half usually moves within microseconds: look again at once,
                // giving the core away in between, before sleeping in short slices.
                (false, true) => {
                    std::thread::yield_now();
                    Duration::ZERO
                }
                (false, false) => OTHER_HALF_WAKE,
            };
            poll(fds.fds(), (self.timeout - idle).min(wait))?;
            check_abort(me, self.abort.as_deref())?;
        }
    }
}

/// The connection to rank `j`.
fn peer_of(me: usize, peers: &[Option<Peer>], j: usize) -> Result<&Peer> {
    peers.get(j).and_then(Option::as_ref).ok_or_else(|| {
        Error::Rank(format!(
            "rank {me}: no connection to rank {j} (ranks 0..{}, none to itself)",
            peers.len()
        ))
    })
}

/// An error once the launcher has set the abort flag.
fn check_abort(me: usize, abort: Option<&AtomicBool>) -> Result<()> {
    match abort {
        Some(flag) if flag.load(Ordering::Relaxed) => Err(Error::Rank(format!(
            "rank {me}: run aborted by the launcher"
        ))),
        _ => Ok(()),
    }
}

impl Transport for TcpTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn nranks(&self) -> usize {
        self.peers.len()
    }

    fn send_recv(
        &mut self,
        send: Option<Outgoing<'_>>,
        recv: Option<Incoming<'_, '_>>,
    ) -> Result<()> {
        self.drive(send, recv, &mut || Ok((false, true)))
    }

    fn mark_progress(&mut self) {
        self.progress.fetch_add(1, Ordering::Relaxed);
    }
}

/// The error for an exchange in which nothing moved for `timeout`: names the rank this rank was
/// receiving from, or else the one it was sending to.
fn stalled(me: usize, timeout: Duration, tx: Option<&Tx>, rx: Option<&Rx>) -> Error {
    let (peer, addr, what) = match (rx, tx) {
        (Some(r), _) => (r.from, r.peer.addr, r.progress()),
        (None, Some(t)) => (t.to, t.peer.addr, t.progress()),
        (None, None) => return Error::Rank(format!("rank {me}: timed out after {timeout:?}")),
    };
    Error::Rank(format!(
        "rank {me}: timed out after {timeout:?} waiting for rank {peer} ({addr}); {what}"
    ))
}
