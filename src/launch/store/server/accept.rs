//! The accepting thread: takes every connection, reads the hellos side by side with poll(2) and
//! gives each admitted rank its own thread. A connection costs no thread until its hello has
//! proved it holds the token, at most [`MAX_PENDING`] wait for their hello at once (a new one
//! past that closes the oldest), and each has [`HELLO_LIMIT`] to complete it; so idle or
//! hostile peers can neither exhaust the slots of the ranks nor hold a socket for long.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::refusal::{self, Refusal};
use super::{session, Conn, Presence, Shared};
use crate::launch::peers;
use crate::launch::store::proto::{self, Dec};
use crate::launch::store::{same_token, MAX_TOKEN};

/// How long a connection may take to send its whole hello (the store's timeout if shorter).
pub(in crate::launch::store) const HELLO_LIMIT: Duration = Duration::from_secs(10);
/// Connections that may wait for their hello at once.
pub(in crate::launch::store) const MAX_PENDING: usize = 64;
/// The longest sleep in poll(2): how often the thread looks at the stop flag.
const SLICE: Duration = Duration::from_millis(100);

/// A connection that has not yet completed its hello.
struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    buf: [u8; 4 + proto::MAX_HELLO],
    got: usize,
    since: Instant,
}

pub(super) fn accept_loop(sh: &Arc<Shared>, listener: &TcpListener) {
    let limit = sh.timeout.min(HELLO_LIMIT);
    let mut pending: Vec<Pending> = Vec::new();
    while !sh.stop.load(Ordering::SeqCst) {
        accept_ready(sh, listener, &mut pending);
        let mut i = 0;
        while i < pending.len() {
            match read_hello(&mut pending[i], limit) {
                None => i += 1,
                Some(outcome) => {
                    let mut p = pending.swap_remove(i);
                    match outcome.and_then(|()| admit(sh, &mut p)) {
                        Ok(rank) => serve(sh, p.stream, rank),
                        Err(why) => refuse(sh, p, &why),
                    }
                }
            }
        }
        wait_for_any(listener, &pending, limit);
    }
}

/// Accepts the connections in the backlog, at most [`MAX_PENDING`] a round so that a steady
/// flood cannot keep the thread from reading hellos. Out of descriptors (or another accept
/// error), it closes the oldest pending connection and pauses rather than spin.
fn accept_ready(sh: &Shared, listener: &TcpListener, pending: &mut Vec<Pending>) {
    for _ in 0..MAX_PENDING {
        match listener.accept() {
            Ok((stream, peer)) => {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                if pending.len() >= MAX_PENDING {
                    refuse_oldest(sh, pending);
                }
                pending.push(Pending {
                    stream,
                    peer,
                    buf: [0; 4 + proto::MAX_HELLO],
                    got: 0,
                    since: Instant::now(),
                });
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                ) => {}
            Err(_) => {
                refuse_oldest(sh, pending);
                thread::sleep(Duration::from_millis(10));
                return;
            }
        }
    }
}

fn refuse_oldest(sh: &Shared, pending: &mut Vec<Pending>) {
    if let Some(k) = (0..pending.len()).min_by_key(|&k| pending[k].since) {
        let p = pending.swap_remove(k);
        refuse(sh, p, &Refusal::Crowded(MAX_PENDING));
    }
}

/// Reads what has arrived of a hello, never past its end (the peer waits for our answer
/// before it sends more). None: incomplete and still in time; Ok: complete (its payload is
/// `buf[4..got]`), though not yet checked.
fn read_hello(p: &mut Pending, limit: Duration) -> Option<Result<(), Refusal>> {
    loop {
        let need = match p.got {
            n if n < 4 => 4,
            _ => 4 + (u32::from_le_bytes(p.buf[..4].try_into().expect("4 bytes")) as usize),
        };
        if need > p.buf.len() || (p.got >= 12 && p.buf[4..12] != proto::MAGIC[..]) {
            return Some(Err(not_a_hello(p)));
        }
        if p.got == need {
            return Some(Ok(()));
        }
        match (&p.stream).read(&mut p.buf[p.got..need]) {
            Ok(0) => return Some(Err(Refusal::Closed)),
            Ok(n) => p.got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(_) => return Some(Err(Refusal::Closed)),
        }
    }
    (p.since.elapsed() >= limit).then_some(Err(Refusal::Silent(limit)))
}

/// The refusal of something that is not a hello, showing how it starts: what was read, plus
/// what else has arrived up to one byte more than the log shows (so it can mark a cut).
fn not_a_hello(p: &mut Pending) -> Refusal {
    let mut start = p.buf[..p.got].to_vec();
    let mut more = [0u8; refusal::SHOWN_BYTES + 1];
    let want = more.len().saturating_sub(start.len());
    if let Ok(n) = (&p.stream).read(&mut more[..want]) {
        start.extend_from_slice(&more[..n]);
    }
    Refusal::NotAHello { start }
}

/// A hello payload's claim; None when it is malformed.
pub(in crate::launch::store) fn decode_hello(payload: &[u8]) -> Option<(u32, &[u8])> {
    let mut d = Dec::new(payload);
    let magic = d.take(proto::MAGIC.len()).ok()?;
    let rank = d.u32().ok()?;
    let token = d.bytes16(MAX_TOKEN).ok()?;
    (magic == proto::MAGIC && d.end().is_ok()).then_some((rank, token))
}

/// Checks a complete hello and takes the rank it claims, or says why not.
fn admit(sh: &Shared, p: &mut Pending) -> Result<usize, Refusal> {
    let Some((rank, token)) = decode_hello(&p.buf[4..p.got]) else {
        return Err(not_a_hello(p));
    };
    if !same_token(token, &sh.token) {
        return Err(Refusal::WrongToken { rank });
    }
    let r = rank as usize;
    if r >= sh.world {
        return Err(Refusal::OutOfRange {
            rank,
            world: sh.world,
        });
    }
    let mut st = sh.lock();
    match &st.presence[r] {
        Presence::Never => {}
        Presence::Connected => return Err(Refusal::Duplicate { rank: r }),
        Presence::Left | Presence::Lost(_) => return Err(Refusal::AlreadyLeft { rank: r }),
    }
    st.presence[r] = Presence::Connected;
    Ok(r)
}

/// Gives an admitted rank its own thread (which welcomes it), first joining the threads of
/// ranks that have gone.
fn serve(sh: &Arc<Shared>, stream: TcpStream, rank: usize) {
    let mut conns = sh.conns.lock().unwrap_or_else(PoisonError::into_inner);
    let (done, live): (Vec<Conn>, Vec<Conn>) = std::mem::take(&mut *conns)
        .into_iter()
        .partition(|c| c.thread.is_finished());
    *conns = live;
    for c in done {
        let _ = c.thread.join();
    }
    let lost = |e: std::io::Error| {
        sh.lock().presence[rank] = Presence::Lost(format!("could not be served: {e}"));
        sh.changed.notify_all();
    };
    // The store keeps a handle to shut the connection down when it stops.
    let clone = match stream.try_clone() {
        Ok(c) => c,
        Err(e) => return lost(e),
    };
    let sh2 = sh.clone();
    let spawned = thread::Builder::new()
        .name("collbench-store-conn".into())
        .spawn(move || session::serve(&sh2, stream, rank));
    match spawned {
        Ok(thread) => conns.push(Conn {
            stream: clone,
            thread,
        }),
        Err(e) => lost(e),
    }
}

/// Logs the refusal, answers the peer when it is owed an answer, and closes the connection.
fn refuse(sh: &Shared, p: Pending, why: &Refusal) {
    let claimed = why.claimed().filter(|&r| r < sh.world);
    let line = sh.refused().record(p.peer, &why.reason(), claimed);
    if let Some(line) = line {
        // Printed without holding any lock: a stalled stderr must not stall the store.
        crate::say!("{line}");
    }
    if let Some(msg) = why.reply() {
        // A fresh connection's send buffer takes the short answer at once; if it does not,
        // the peer goes without.
        let _ = (&p.stream).write(&proto::err_frame(proto::ERR_USAGE, &msg));
        // Closing with unread bytes queued makes the kernel reset the connection, which can
        // destroy the answer before the peer reads it: end our side, then take (a bounded
        // amount of) what it sent.
        let _ = p.stream.shutdown(std::net::Shutdown::Write);
        let mut sink = [0u8; 4096];
        for _ in 0..16 {
            match (&p.stream).read(&mut sink) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
    }
}

/// Sleeps until the listener or a pending connection has something, the next hello deadline
/// passes, or [`SLICE`] has passed.
fn wait_for_any(listener: &TcpListener, pending: &[Pending], limit: Duration) {
    let first_due = pending.iter().map(|p| p.since + limit).min();
    let wait = first_due.map_or(SLICE, |d| {
        d.saturating_duration_since(Instant::now()).min(SLICE)
    });
    let streams = pending.iter().map(|p| &p.stream);
    // An error (EINTR) only ends the wait early.
    let _ = peers::wait_readable(listener, streams, wait.max(Duration::from_millis(1)));
}
