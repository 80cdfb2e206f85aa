//! Building the mesh: one TCP connection per pair of ranks, opened by the higher rank and checked
//! by a fixed-size handshake before any data flows (see the parent module's docs).

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use super::accept;
use super::hello::{set_buffers, tune, Hello, HELLO_LEN};
use crate::error::{Error, Result};
use crate::launch::peers::Refusals;

/// Pause between attempts to reach a listener that refuses connections (not up yet).
const RETRY: Duration = Duration::from_millis(20);

/// Connects `rank` to every other rank: dials the lower ranks in order, then accepts the higher
/// ones in whatever order they come. Returns one non-blocking stream per peer (None at `rank`).
pub(super) fn build(
    rank: usize,
    listener: &TcpListener,
    peers: &[SocketAddr],
    token: u64,
    timeout: Duration,
) -> Result<Vec<Option<TcpStream>>> {
    let nranks = peers.len();
    let hello = Hello {
        token,
        rank: rank as u32,
        nranks: nranks as u32,
    };
    let deadline = Instant::now() + timeout;
    // Accepted sockets inherit the listener's buffer sizes.
    set_buffers(listener.as_raw_fd());
    let mut streams: Vec<Option<TcpStream>> = (0..nranks).map(|_| None).collect();
    for (j, &addr) in peers.iter().enumerate().take(rank) {
        streams[j] = Some(dial(rank, hello, j, addr, deadline, timeout)?);
    }
    let mut refused = Refusals::new(format!("rank {rank}'s TCP mesh"));
    let within = (deadline, timeout);
    accept::accept_all(rank, hello, listener, within, &mut streams, &mut refused)?;
    Ok(streams)
}

/// The time left before `deadline`, None once it has passed.
fn left(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

/// Opens the connection to lower rank `to`, says hello and checks the answer.
fn dial(
    me: usize,
    hello: Hello,
    to: usize,
    addr: SocketAddr,
    deadline: Instant,
    timeout: Duration,
) -> Result<TcpStream> {
    let fail = |what: String| Error::Rank(format!("rank {me}: rank {to} at {addr}: {what}"));
    let mut last = String::new();
    let mut stream = loop {
        let Some(wait) = left(deadline) else {
            return Err(fail(format!(
                "could not connect within {timeout:?} ({last})"
            )));
        };
        match TcpStream::connect_timeout(&addr, wait) {
            Ok(s) => break s,
            Err(e) if is_retryable(&e) => {
                last = e.to_string();
                std::thread::sleep(RETRY.min(wait));
            }
            Err(e) => return Err(fail(format!("could not connect: {e}"))),
        }
    };
    tune(&stream).map_err(|e| fail(format!("could not set socket options: {e}")))?;
    let mut answer = [0u8; HELLO_LEN];
    let talk = |s: &mut TcpStream, answer: &mut [u8]| -> io::Result<()> {
        let wait = left(deadline).ok_or(ErrorKind::TimedOut)?;
        s.set_write_timeout(Some(wait))?;
        s.set_read_timeout(Some(wait))?;
        s.write_all(&hello.encode())?;
        s.read_exact(answer)
    };
    match talk(&mut stream, &mut answer) {
        Ok(()) => {}
        Err(e)
            if e.kind() == ErrorKind::UnexpectedEof || e.kind() == ErrorKind::ConnectionReset =>
        {
            return Err(fail(
                "closed the connection during the handshake (a different job token, or not \
                 this job's rank there)"
                    .into(),
            ))
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            return Err(fail(format!("no handshake answer within {timeout:?}")))
        }
        Err(e) => return Err(fail(format!("handshake failed: {e}"))),
    }
    let want = Hello {
        rank: to as u32,
        ..hello
    };
    match Hello::decode(&answer) {
        Some(got) if got == want => {}
        Some(got) => {
            return Err(fail(format!(
                "answered as rank {} of {}{}",
                got.rank,
                got.nranks,
                if got.token == hello.token {
                    ""
                } else {
                    " with another job token"
                }
            )))
        }
        None => return Err(fail("answered with something that is not collbench".into())),
    }
    let ready = |s: &TcpStream| -> io::Result<()> {
        s.set_read_timeout(None)?;
        s.set_write_timeout(None)?;
        s.set_nonblocking(true)
    };
    ready(&stream).map_err(|e| fail(format!("could not set socket options: {e}")))?;
    Ok(stream)
}

/// Errors after which dialing again may succeed (the peer's listener is not up yet, or the
/// attempt itself timed out while time is left).
fn is_retryable(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::TimedOut
            | ErrorKind::Interrupted
    )
}

/// The send and receive buffer sizes the kernel reports for a socket (Linux reports twice the
/// requested size: half of it is bookkeeping).
pub(super) fn buffer_sizes(fd: RawFd) -> (usize, usize) {
    let get = |opt| {
        let mut v: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: v and len are live and sized for the option.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            v.max(0) as usize
        } else {
            0
        }
    };
    (get(libc::SO_SNDBUF), get(libc::SO_RCVBUF))
}
