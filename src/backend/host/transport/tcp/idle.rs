//! Waiting between collectives: a rank that sits out a point waits for the next message from
//! the rank that coordinates, while watching every other connection, so that a peer that dies
//! meanwhile ends the wait at once instead of after the whole point.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::flow::poll;
use super::{check_abort, TcpTransport, WAKE};
use crate::error::{Error, Result};

impl TcpTransport {
    /// Returns once rank `from` has sent something (the bytes stay queued for the next
    /// receive). Fails if `limit` passes first, the abort flag is set, or any peer closes its
    /// connection or sends bytes that nothing asked for.
    pub fn wait_message(&self, from: usize, limit: Duration) -> Result<()> {
        let me = self.rank;
        let started = Instant::now();
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(self.peers.len());
        let mut ranks: Vec<usize> = Vec::with_capacity(self.peers.len());
        for (j, p) in self.peers.iter().enumerate() {
            if let Some(p) = p {
                fds.push(libc::pollfd {
                    fd: p.stream.as_raw_fd(),
                    // Other peers may already be sending the next point's first bytes, which
                    // stay queued; from them only a hang-up matters.
                    events: if j == from {
                        libc::POLLIN | libc::POLLRDHUP
                    } else {
                        libc::POLLRDHUP
                    },
                    revents: 0,
                });
                ranks.push(j);
            }
        }
        loop {
            check_abort(me, self.abort.as_deref())?;
            let waited = started.elapsed();
            if waited >= limit {
                let addr = self.peer_addr(from).map_or("?".into(), |a| a.to_string());
                return Err(Error::Rank(format!(
                    "rank {me}: timed out after {limit:?} waiting for rank {from} ({addr}) to start the next point"
                )));
            }
            fds.iter_mut().for_each(|f| f.revents = 0);
            poll(&mut fds, (limit - waited).min(WAKE))?;
            for (f, &j) in fds.iter().zip(&ranks) {
                if f.revents == 0 {
                    continue;
                }
                if j == from && (f.revents & libc::POLLIN != 0) && self.has_bytes(j) {
                    return Ok(());
                }
                let what = if f.revents & libc::POLLERR != 0 {
                    "connection failed"
                } else {
                    "closed its connection"
                };
                let addr = self.peer_addr(j).map_or("?".into(), |a| a.to_string());
                return Err(Error::Rank(format!("rank {me}: rank {j} ({addr}) {what}")));
            }
        }
    }

    /// Whether bytes from rank `j` are queued.
    fn has_bytes(&self, j: usize) -> bool {
        let Some(Some(p)) = self.peers.get(j) else {
            return false;
        };
        let mut byte = [0u8; 1];
        // SAFETY: the buffer is live for one byte; MSG_PEEK leaves the data queued.
        let n = unsafe {
            libc::recv(
                p.stream.as_raw_fd(),
                byte.as_mut_ptr().cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n > 0
    }
}
