//! Shared-memory transport: one ring of slots per ordered pair of ranks in the segment.
//! Chunks are copied in by the sender and copied or reduced out by the receiver while they are
//! still in cache, which streams large messages at close to memory bandwidth.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Combine, Incoming, Outgoing, Transport};
use crate::backend::host::layout::Shared;
use crate::backend::host::reduce::{reduce3, reduce_into};
use crate::backend::host::wait::{notify, Sleeper, WaitError, WaitPolicy};
use crate::error::{Error, Result};

/// The shared-memory transport of one rank.
pub struct ShmTransport {
    shared: Rc<Shared>,
    rank: usize,
    policy: WaitPolicy,
    /// Chunks this rank has published to each peer (its copy of the channel head).
    sent: Vec<u64>,
    /// Chunks this rank has consumed from each peer (its copy of the channel tail).
    received: Vec<u64>,
    /// How long a wait may go without the peer moving (None: until the launcher aborts).
    stall: Option<Duration>,
    /// The rank each segment index stands for in messages (a multi-host launch's global ranks).
    names: Vec<usize>,
}

/// Progress through one message.
pub(crate) struct Cursor {
    done: usize,
    len: usize,
}

impl Cursor {
    pub(crate) fn new(len: usize) -> Cursor {
        Cursor { done: 0, len }
    }
    pub(crate) fn finished(&self) -> bool {
        self.done >= self.len
    }
}

impl ShmTransport {
    /// The transport of `rank` over a mapped segment.
    pub fn new(shared: Rc<Shared>, rank: usize, policy: WaitPolicy) -> ShmTransport {
        let n = shared.layout.nranks;
        ShmTransport {
            shared,
            rank,
            policy,
            sent: vec![0; n],
            received: vec![0; n],
            stall: None,
            names: (0..n).collect(),
        }
    }

    /// Fails a wait in which the peer moved nothing for `stall` (no launcher watches the ranks
    /// of a multi-host launch), and names ranks as `names[i]` in messages.
    pub fn with_stall_timeout(mut self, stall: Duration, names: Vec<usize>) -> ShmTransport {
        self.stall = Some(stall);
        if names.len() == self.names.len() {
            self.names = names;
        }
        self
    }

    /// The shared segment (for the rank loop's control traffic).
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    pub(crate) fn can_send(&self, to: usize) -> bool {
        let tail = self.shared.tail(self.rank, to).load(Ordering::Acquire);
        self.sent[to] - tail < self.shared.layout.slots as u64
    }

    pub(crate) fn can_recv(&self, from: usize) -> bool {
        self.shared.head(from, self.rank).load(Ordering::Acquire) > self.received[from]
    }

    /// Copies the next chunk of `data` into a free slot and publishes it.
    pub(crate) fn push(&mut self, to: usize, data: &[u8], cur: &mut Cursor) {
        let n = (cur.len - cur.done).min(self.shared.layout.slot_bytes);
        let slot = self.shared.slot(self.rank, to, self.sent[to] as usize);
        // SAFETY: the slot is free (checked by can_send), so only this rank touches it until the
        // head store below publishes it; it holds slot_bytes >= n bytes.
        unsafe { std::ptr::copy_nonoverlapping(data[cur.done..].as_ptr(), slot, n) };
        self.sent[to] += 1;
        self.shared
            .head(self.rank, to)
            .store(self.sent[to], Ordering::Release);
        notify(self.shared.doorbell(to), self.shared.sleeping(to));
        cur.done += n;
    }

    /// Consumes the next published chunk from `from` into `out` and frees its slot.
    pub(crate) fn pop(&mut self, from: usize, out: &mut [u8], how: Combine<'_>, cur: &mut Cursor) {
        let n = (cur.len - cur.done).min(self.shared.layout.slot_bytes);
        let slot = self
            .shared
            .slot(from, self.rank, self.received[from] as usize);
        // SAFETY: the slot was published (can_recv) and the sender will not reuse it until the
        // tail store below; n <= slot_bytes.
        let incoming = unsafe { std::slice::from_raw_parts(slot as *const u8, n) };
        let dst = &mut out[cur.done..cur.done + n];
        match how {
            Combine::Copy => dst.copy_from_slice(incoming),
            Combine::Reduce { dtype, op } => reduce_into(dtype, op, dst, incoming),
            Combine::ReduceWith { dtype, op, local } => {
                let local = &local[cur.done..cur.done + n];
                reduce3(dtype, op, dst, local, incoming)
            }
        }
        self.received[from] += 1;
        self.shared
            .tail(from, self.rank)
            .store(self.received[from], Ordering::Release);
        notify(self.shared.doorbell(from), self.shared.sleeping(from));
        cur.done += n;
    }

    fn wait_for(&self, to: Option<usize>, from: Option<usize>) -> Result<()> {
        let sh = &self.shared;
        let peer = from.or(to).map_or(-1, |p| p as i32);
        sh.waiting_on(self.rank).store(peer, Ordering::Relaxed);
        let sleeper = Sleeper {
            doorbell: sh.doorbell(self.rank),
            sleeping: sh.sleeping(self.rank),
            abort: sh.abort_flag(),
        };
        let ready =
            || to.is_some_and(|t| self.can_send(t)) || from.is_some_and(|f| self.can_recv(f));
        let deadline = self.stall.map(|d| Instant::now() + d);
        let res = sleeper.wait(self.policy, deadline, ready);
        sh.waiting_on(self.rank).store(-1, Ordering::Relaxed);
        let me = self.names[self.rank];
        res.map_err(|e| match e {
            WaitError::Aborted => Error::Rank(format!("rank {me}: run aborted by the launcher")),
            WaitError::TimedOut => {
                let peer = from
                    .or(to)
                    .map_or(String::from("?"), |p| self.names[p].to_string());
                let after = self.stall.unwrap_or_default();
                Error::Rank(format!(
                    "rank {me}: timed out after {after:?} waiting for rank {peer} (shared memory)"
                ))
            }
        })
    }
}

impl Transport for ShmTransport {
    fn rank(&self) -> usize {
        self.rank
    }

    fn nranks(&self) -> usize {
        self.shared.layout.nranks
    }

    fn send_recv(
        &mut self,
        send: Option<Outgoing<'_>>,
        recv: Option<Incoming<'_, '_>>,
    ) -> Result<()> {
        let mut scur = Cursor::new(send.map_or(0, |(_, d)| d.len()));
        let (from, out, how) = match recv {
            Some((f, o, h)) => (Some(f), o, h),
            None => (None, &mut [][..], Combine::Copy),
        };
        let mut rcur = Cursor::new(out.len());
        let to = send.map(|(t, _)| t);
        loop {
            let mut moved = false;
            if let Some((t, data)) = send {
                while !scur.finished() && self.can_send(t) {
                    self.push(t, data, &mut scur);
                    moved = true;
                }
            }
            if let Some(f) = from {
                while !rcur.finished() && self.can_recv(f) {
                    self.pop(f, out, how, &mut rcur);
                    moved = true;
                }
            }
            if scur.finished() && rcur.finished() {
                return Ok(());
            }
            if !moved {
                let t = to.filter(|_| !scur.finished());
                let f = from.filter(|_| !rcur.finished());
                self.wait_for(t, f)?;
            }
        }
    }

    fn mark_progress(&mut self) {
        self.shared
            .progress(self.rank)
            .fetch_add(1, Ordering::Relaxed);
    }
}
