//! One message in each direction in progress on non-blocking sockets, and the poll(2) they wait
//! in (see the parent module's docs).

use std::io::{self, ErrorKind, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use super::Peer;
use crate::backend::host::reduce::{reduce3, reduce_into};
use crate::backend::host::transport::Combine;
use crate::error::{Error, Result};
use crate::launch::peers;

/// An outgoing message in progress.
pub(super) struct Tx<'p, 'd> {
    pub to: usize,
    pub peer: &'p Peer,
    data: &'d [u8],
    sent: usize,
}

impl<'p, 'd> Tx<'p, 'd> {
    pub fn new(to: usize, peer: &'p Peer, data: &'d [u8]) -> Self {
        Tx {
            to,
            peer,
            data,
            sent: 0,
        }
    }

    pub fn pending(&self) -> bool {
        self.sent < self.data.len()
    }

    pub fn fd(&self) -> RawFd {
        self.peer.stream.as_raw_fd()
    }

    /// Writes what the socket takes; true if any byte went.
    pub fn advance(&mut self, me: usize) -> Result<bool> {
        match send_some(self.fd(), &self.data[self.sent..]) {
            Ok(n) => {
                self.sent += n;
                Ok(n > 0)
            }
            Err(e) if is_transient(&e) => Ok(false),
            Err(e) => Err(failed(me, self.to, self.peer, &e)),
        }
    }

    pub fn progress(&self) -> String {
        format!("sent {} of {} bytes", self.sent, self.data.len())
    }
}

/// An incoming message in progress.
pub(super) struct Rx<'p, 'a, 'b> {
    pub from: usize,
    pub peer: &'p Peer,
    flow: Inflow<'a, 'b>,
}

impl<'p, 'a, 'b> Rx<'p, 'a, 'b> {
    pub fn new(from: usize, peer: &'p Peer, out: &'a mut [u8], how: Combine<'b>) -> Self {
        Rx {
            from,
            peer,
            flow: Inflow::new(out, how),
        }
    }

    pub fn needs_staging(&self) -> bool {
        !matches!(self.flow.how, Combine::Copy)
    }

    pub fn pending(&self) -> bool {
        !self.flow.finished()
    }

    pub fn fd(&self) -> RawFd {
        self.peer.stream.as_raw_fd()
    }

    /// Reads what has arrived; true if any byte came. A closed connection is an error naming
    /// the peer.
    pub fn advance(&mut self, me: usize, staging: &mut [u8]) -> Result<bool> {
        match self.flow.read_from(&self.peer.stream, staging) {
            Ok(0) => Err(Error::Rank(format!(
                "rank {me}: rank {} ({}) closed the connection after {} of {} bytes",
                self.from,
                self.peer.addr,
                self.flow.done + self.flow.pend,
                self.flow.out.len()
            ))),
            Ok(_) => Ok(true),
            Err(e) if is_transient(&e) => Ok(false),
            Err(e) => Err(failed(me, self.from, self.peer, &e)),
        }
    }

    pub fn progress(&self) -> String {
        let f = &self.flow;
        format!("received {} of {} bytes", f.done + f.pend, f.out.len())
    }
}

/// Where the bytes of one incoming message go.
pub(super) struct Inflow<'a, 'b> {
    pub out: &'a mut [u8],
    how: Combine<'b>,
    /// Bytes of `out` that hold their final value.
    pub done: usize,
    /// Bytes at the front of the staging buffer that belong at `out[done..]` but do not yet
    /// make a whole element.
    pub pend: usize,
}

impl<'a, 'b> Inflow<'a, 'b> {
    pub fn new(out: &'a mut [u8], how: Combine<'b>) -> Self {
        Inflow {
            out,
            how,
            done: 0,
            pend: 0,
        }
    }

    pub fn finished(&self) -> bool {
        self.done >= self.out.len()
    }

    /// Reads what has arrived, never more than the message still needs: straight into `out`
    /// for a copy, through `staging` for a reduction. Ok(0) means the peer closed.
    fn read_from(&mut self, mut stream: impl Read, staging: &mut [u8]) -> io::Result<usize> {
        if let Combine::Copy = self.how {
            let n = stream.read(&mut self.out[self.done..])?;
            self.done += n;
            return Ok(n);
        }
        let cap = staging.len().min(self.out.len() - self.done);
        let n = stream.read(&mut staging[self.pend..cap])?;
        self.absorb(staging, n);
        Ok(n)
    }

    /// Combines the whole elements among the `pend + n` staged bytes into `out` and moves the
    /// bytes of a trailing partial element to the front of `staging`.
    pub fn absorb(&mut self, staging: &mut [u8], n: usize) {
        let total = self.pend + n;
        let el = match self.how {
            Combine::Copy => 1,
            Combine::Reduce { dtype, .. } | Combine::ReduceWith { dtype, .. } => dtype.size(),
        };
        let whole = if self.done + total == self.out.len() {
            total
        } else {
            total - total % el
        };
        let range = self.done..self.done + whole;
        let (dst, src) = (&mut self.out[range.clone()], &staging[..whole]);
        match self.how {
            Combine::Copy => dst.copy_from_slice(src),
            Combine::Reduce { dtype, op } => reduce_into(dtype, op, dst, src),
            Combine::ReduceWith { dtype, op, local } => reduce3(dtype, op, dst, &local[range], src),
        }
        staging.copy_within(whole..total, 0);
        self.pend = total - whole;
        self.done += whole;
    }
}

/// The error for a connection that failed under a send or receive.
fn failed(me: usize, peer: usize, p: &Peer, e: &io::Error) -> Error {
    Error::Rank(format!(
        "rank {me}: connection to rank {peer} ({}) failed: {e}",
        p.addr
    ))
}

/// Writes what the socket takes; MSG_NOSIGNAL turns a closed peer into EPIPE, not SIGPIPE.
fn send_some(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: data is a live slice of data.len() bytes.
    let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted)
}

/// Up to two descriptors to wait on; a peer both sent to and received from is one entry.
pub(super) struct PollSet {
    fds: [libc::pollfd; 2],
    len: usize,
}

impl PollSet {
    pub fn new() -> Self {
        let none = libc::pollfd {
            fd: -1,
            events: 0,
            revents: 0,
        };
        PollSet {
            fds: [none; 2],
            len: 0,
        }
    }

    pub fn add(&mut self, fd: RawFd, events: libc::c_short) {
        match self.fds[..self.len].iter_mut().find(|f| f.fd == fd) {
            Some(f) => f.events |= events,
            None => {
                self.fds[self.len] = libc::pollfd {
                    fd,
                    events,
                    revents: 0,
                };
                self.len += 1;
            }
        }
    }

    pub fn fds(&mut self) -> &mut [libc::pollfd] {
        &mut self.fds[..self.len]
    }
}

/// Sleeps until one of `fds` is ready or `wait` passes (see [`peers::poll`]).
pub(super) fn poll(fds: &mut [libc::pollfd], wait: Duration) -> Result<()> {
    peers::poll(fds, wait).map_err(|e| Error::Os {
        what: "poll".into(),
        source: e,
    })
}
