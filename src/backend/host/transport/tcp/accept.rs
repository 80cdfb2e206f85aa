//! The accepting side of the mesh: hellos read side by side with poll(2), at most
//! [`MAX_PENDING`] at once and each within [`HELLO_LIMIT`], so idle or hostile connections
//! neither block the ranks nor exhaust descriptors; every refused connection is logged with its
//! address and reason (the first [`peers::MAX_LOGGED`]), and a rank that never comes is reported with
//! the refusal of any peer that claimed it.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::hello::{tune, Hello, HELLO_LEN, MAGIC};
use super::WAKE;
use crate::error::{Error, Result};
use crate::launch::peers::{self, Refusals};

/// How long an accepted connection may take to present its hello.
pub(super) const HELLO_LIMIT: Duration = Duration::from_secs(5);
/// Accepted connections still owing their hello; a new one past this closes the oldest.
pub(super) const MAX_PENDING: usize = 64;
/// Bytes of a malformed hello shown (escaped) in the log.
const SHOWN_BYTES: usize = 8;

/// An accepted connection that has not yet said who it is.
pub(super) struct Pending {
    stream: TcpStream,
    peer: SocketAddr,
    hello: [u8; HELLO_LEN],
    got: usize,
    since: Instant,
}

/// What one look at a pending connection found.
enum Step {
    Wait,
    Refuse(String, Option<usize>),
    Admit(usize),
}

/// Accepts the higher ranks. Connections with a wrong hello, a wrong token, a rank that is out
/// of range, not above `me` or already connected are logged and closed; they never stop the
/// good ones. `refused` keeps what was refused.
pub(super) fn accept_all(
    me: usize,
    hello: Hello,
    listener: &TcpListener,
    (deadline, timeout): (Instant, Duration),
    streams: &mut [Option<TcpStream>],
    refused: &mut Refusals,
) -> Result<()> {
    let os = |what: &str, e: io::Error| Error::Os {
        what: format!("rank {me}: {what}"),
        source: e,
    };
    listener
        .set_nonblocking(true)
        .map_err(|e| os("listener", e))?;
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        accept_ready(listener, &mut pending, refused).map_err(|e| os("accept", e))?;
        settle_pending(hello, &mut pending, streams, refused);
        let missing: Vec<usize> = (me + 1..streams.len())
            .filter(|&r| streams[r].is_none())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let Some(wait) = deadline.checked_duration_since(Instant::now()) else {
            let at = listener.local_addr().map_or("?".into(), |a| a.to_string());
            return Err(Error::Rank(format!(
                "rank {me}: timed out after {timeout:?} waiting for rank(s) {missing:?} to \
                 connect to {at}{}",
                refused.notes_for(&missing)
            )));
        };
        let streams = pending.iter().map(|p| &p.stream);
        peers::wait_readable(listener, streams, wait.min(WAKE)).map_err(|e| Error::Os {
            what: "poll".into(),
            source: e,
        })?;
    }
}

/// Reads every pending hello, admits the good ones (answering them), refuses the bad and
/// the late.
fn settle_pending(
    ours: Hello,
    pending: &mut Vec<Pending>,
    streams: &mut [Option<TcpStream>],
    refused: &mut Refusals,
) {
    let answer = ours.encode();
    let mut i = 0;
    while i < pending.len() {
        let step = match step(&mut pending[i], ours, streams) {
            Step::Wait if pending[i].since.elapsed() >= HELLO_LIMIT => {
                Step::Refuse(format!("no complete hello within {HELLO_LIMIT:?}"), None)
            }
            s => s,
        };
        match step {
            Step::Wait => i += 1,
            Step::Refuse(why, claimed) => {
                let p = pending.swap_remove(i);
                log(refused.record(p.peer, &why, claimed));
            }
            Step::Admit(r) => {
                let p = pending.swap_remove(i);
                // 24 bytes always fit in a fresh connection's send buffer.
                if (&p.stream).write(&answer).ok() == Some(HELLO_LEN) {
                    streams[r] = Some(p.stream);
                }
            }
        }
    }
}

/// Accepts the connections waiting in the backlog, closing the oldest pending one whenever
/// [`MAX_PENDING`] are pending; at most [`MAX_PENDING`] a round, so that a steady flood cannot
/// keep the rank from reading hellos.
fn accept_ready(
    listener: &TcpListener,
    pending: &mut Vec<Pending>,
    refused: &mut Refusals,
) -> io::Result<()> {
    for _ in 0..MAX_PENDING {
        match listener.accept() {
            Ok((stream, peer)) => {
                // A connection whose options cannot be set is as good as closed.
                if stream.set_nonblocking(true).is_err() || tune(&stream).is_err() {
                    continue;
                }
                if pending.len() >= MAX_PENDING {
                    refuse_oldest(pending, refused);
                }
                pending.push(Pending {
                    stream,
                    peer,
                    hello: [0; HELLO_LEN],
                    got: 0,
                    since: Instant::now(),
                });
            }
            Err(e) => return after_accept_error(e, pending, refused),
        }
    }
    Ok(())
}

/// Ends one round of accepting: Ok to go on polling, Err for a listener that is broken. Out of
/// descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM) the oldest pending connection is closed to
/// make room, and the mesh goes on rather than fail because of connections nobody asked for.
pub(super) fn after_accept_error(
    e: io::Error,
    pending: &mut Vec<Pending>,
    refused: &mut Refusals,
) -> io::Result<()> {
    let out_of_room = matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    );
    match e.kind() {
        ErrorKind::WouldBlock => Ok(()),
        // The connection went away before we took it, or a signal: the next round goes on.
        ErrorKind::ConnectionAborted | ErrorKind::Interrupted => Ok(()),
        _ if out_of_room => {
            refuse_oldest(pending, refused);
            std::thread::sleep(Duration::from_millis(10));
            Ok(())
        }
        _ => Err(e),
    }
}

fn refuse_oldest(pending: &mut Vec<Pending>, refused: &mut Refusals) {
    if let Some(k) = (0..pending.len()).min_by_key(|&k| pending[k].since) {
        let p = pending.swap_remove(k);
        let why = format!(
            "no complete hello yet when {MAX_PENDING} connections were waiting to say hello \
             (the oldest makes room)"
        );
        log(refused.record(p.peer, &why, None));
    }
}

/// Writes a refusal's log line, when it has one.
fn log(line: Option<String>) {
    if let Some(line) = line {
        crate::say!("{line}");
    }
}

/// Reads what has arrived of a pending hello (never more than the hello) and judges it.
fn step(p: &mut Pending, ours: Hello, streams: &[Option<TcpStream>]) -> Step {
    match (&p.stream).read(&mut p.hello[p.got..]) {
        Ok(0) => {
            let why = format!(
                "closed the connection after {} of {HELLO_LEN} hello bytes",
                p.got
            );
            return Step::Refuse(why, None);
        }
        Ok(n) => p.got += n,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
        Err(e) => return Step::Refuse(format!("connection failed during its hello: {e}"), None),
    }
    if p.got >= MAGIC.len() && p.hello[..MAGIC.len()] != MAGIC {
        return Step::Refuse(not_a_hello(&p.hello), None);
    }
    if p.got < HELLO_LEN {
        return Step::Wait;
    }
    match judge(&p.hello, ours, streams) {
        Ok(r) => Step::Admit(r),
        Err((why, claimed)) => Step::Refuse(why, claimed),
    }
}

/// The reason for refusing bytes that do not open with the magic: how they start, escaped.
fn not_a_hello(bytes: &[u8]) -> String {
    let start = peers::escaped(&bytes[..SHOWN_BYTES], SHOWN_BYTES);
    format!("not a collbench mesh hello (starts with \"{start}\")")
}

/// Admits a hello's rank, or says why not (and which in-range rank it claimed, if any).
pub(super) fn judge(
    bytes: &[u8; HELLO_LEN],
    ours: Hello,
    streams: &[Option<TcpStream>],
) -> std::result::Result<usize, (String, Option<usize>)> {
    let Some(h) = Hello::decode(bytes) else {
        return Err((not_a_hello(bytes), None));
    };
    let (me, r) = (ours.rank as usize, h.rank as usize);
    let in_range = (me + 1..streams.len()).contains(&r);
    let claimed = in_range.then_some(r);
    let why = if h.token != ours.token {
        format!("wrong token (claimed rank {r})")
    } else if h.nranks != ours.nranks {
        format!(
            "claimed rank {r} of {} ranks; this job has {}",
            h.nranks, ours.nranks
        )
    } else if !in_range {
        format!(
            "claimed rank {r}, which does not dial rank {me} (ranks above {me} do, up to {})",
            streams.len() - 1
        )
    } else if streams[r].is_some() {
        format!("claimed rank {r}, which is already connected")
    } else {
        return Ok(r);
    };
    Err((why, claimed))
}
