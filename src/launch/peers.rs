//! What the TCP mesh and the rendezvous store share as listeners that strangers may dial: the
//! bounded log of refused peers (with, per claimed rank, the last refusal, for "rank 1 never
//! connected" messages), peer bytes shown escaped, and the wait on a listener plus the
//! connections that still owe their hello.

use std::collections::HashMap;
use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Log lines written per listener; later refusals are counted, not logged, so that a flood of
/// hostile connections cannot flood stderr.
pub const MAX_LOGGED: usize = 100;

/// The refusals of one listener: how many were logged and, per claimed rank, the last refusal
/// of a peer claiming it.
pub struct Refusals {
    /// Who refused, as the log names it ("rank 0's store").
    who: String,
    logged: usize,
    unlogged: usize,
    by_rank: HashMap<usize, (SocketAddr, String)>,
    #[cfg(test)]
    pub lines: Vec<String>,
}

impl Refusals {
    pub fn new(who: impl Into<String>) -> Self {
        Refusals {
            who: who.into(),
            logged: 0,
            unlogged: 0,
            by_rank: HashMap::new(),
            #[cfg(test)]
            lines: Vec::new(),
        }
    }

    /// Records a refusal of `peer` (which claimed rank `claimed`, if any) and returns the line
    /// to log, unless [`MAX_LOGGED`] lines have been returned already.
    pub fn record(
        &mut self,
        peer: SocketAddr,
        reason: &str,
        claimed: Option<usize>,
    ) -> Option<String> {
        if let Some(r) = claimed {
            // The note names the claimed rank already.
            let cause = reason.replace(&format!(" (claimed rank {r})"), "");
            self.by_rank.insert(r, (peer, cause));
        }
        if self.logged >= MAX_LOGGED {
            self.unlogged += 1;
            return None;
        }
        self.logged += 1;
        let mut line = format!("collbench: {} refused {peer}: {reason}", self.who);
        if self.logged == MAX_LOGGED {
            line.push_str(" (further refusals are counted, not logged)");
        }
        #[cfg(test)]
        self.lines.push(line.clone());
        Some(line)
    }

    /// Refusals that were not logged.
    pub fn unlogged(&self) -> usize {
        self.unlogged
    }

    /// " (a peer claiming rank 1 (127.0.0.1:4000) was refused: wrong token)" for each of
    /// `ranks` (up to four) that a refused peer claimed; empty when none was.
    pub fn notes_for(&self, ranks: &[usize]) -> String {
        let notes: Vec<String> = ranks
            .iter()
            .filter_map(|r| self.by_rank.get(r).map(|(a, why)| (r, a, why)))
            .take(4)
            .map(|(r, a, why)| format!("a peer claiming rank {r} ({a}) was refused: {why}"))
            .collect();
        match notes.is_empty() {
            true => String::new(),
            false => format!(" ({})", notes.join("; ")),
        }
    }
}

/// Printable ASCII as is, everything else (and quotes, backslashes) escaped, at most `most`
/// bytes of input; "..." marks a cut.
pub fn escaped(bytes: &[u8], most: usize) -> String {
    let mut s = bytes[..bytes.len().min(most)].escape_ascii().to_string();
    if bytes.len() > most {
        s.push_str("...");
    }
    s
}

/// Sleeps until `listener` or one of `pending` has something to read, or `wait` passes.
pub fn wait_readable<'a>(
    listener: &TcpListener,
    pending: impl Iterator<Item = &'a TcpStream>,
    wait: Duration,
) -> io::Result<()> {
    let mut fds: Vec<libc::pollfd> = std::iter::once(listener.as_raw_fd())
        .chain(pending.map(|s| s.as_raw_fd()))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    poll(&mut fds, wait)
}

/// Sleeps until one of `fds` is ready or `wait` passes (rounded up to whole milliseconds, so a
/// short remainder does not turn into a spin). A signal counts as a wake-up.
pub fn poll(fds: &mut [libc::pollfd], wait: Duration) -> io::Result<()> {
    let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
    // SAFETY: fds is a live, writable array of fds.len() pollfd.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}
