//! Shared-memory transport: one ring of slots per ordered pair of ranks in the segment.
//! Chunks are copied in by the sender and copied or reduced out by the receiver while they are
//! still in cache, which streams large messages at close to memory bandwidth. Messages from a
//! size up skip the slots: the receiver reads them from the sender's buffer with one copy
//! ([`single_copy`](super::single_copy)), or the sender writes them into the receiver's
//! buffer where the algorithm asks for that ([`written`]).

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::single_copy::{allow_peer_reads, CopyMode, Descriptor};
use super::{Combine, Incoming, Many, Outgoing, Transport};
use crate::backend::host::layout::Shared;
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
    /// Which messages go single-copy.
    mode: CopyMode,
    /// The process id peers read this rank's messages from.
    pid: u32,
    /// Where single-copy bytes land before being reduced into a buffer (grown on first use).
    landing: Vec<u8>,
    /// Bytes received single-copy (for tests and diagnostics).
    single_bytes: u64,
    /// The messages of an `exchange_all` (kept, so calls do not allocate).
    outs: Vec<many::OutMsg>,
    ins: Vec<many::InMsg>,
    /// The messages of a `recv_written_while` (kept, so calls do not allocate).
    offers: Vec<written::Offer>,
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
    /// Messages move as `COLLBENCH_SHM_COPY` says (`auto` if unset or invalid: launchers check it).
    pub fn new(shared: Rc<Shared>, rank: usize, policy: WaitPolicy) -> ShmTransport {
        let n = shared.layout.nranks;
        let mode = CopyMode::from_env().unwrap_or(CopyMode::Auto);
        if mode != CopyMode::Staged {
            allow_peer_reads();
        }
        ShmTransport {
            shared,
            rank,
            policy,
            sent: vec![0; n],
            received: vec![0; n],
            stall: None,
            names: (0..n).collect(),
            mode,
            pid: std::process::id(),
            landing: Vec::new(),
            single_bytes: 0,
            outs: Vec::new(),
            ins: Vec::new(),
            offers: Vec::new(),
        }
    }

    /// Moves messages as `mode` says instead of as `COLLBENCH_SHM_COPY` does.
    pub fn with_copy_mode(mut self, mode: CopyMode) -> ShmTransport {
        self.mode = mode;
        if mode != CopyMode::Staged {
            allow_peer_reads();
        }
        self
    }

    /// Tells peers to read this rank's messages from process `pid` (a missing one makes every
    /// read fail, which exercises the fallback to staged copies).
    #[cfg(test)]
    fn advertise_pid(mut self, pid: u32) -> ShmTransport {
        self.pid = pid;
        self
    }

    /// Bytes this rank has received single-copy so far.
    pub fn single_copy_bytes(&self) -> u64 {
        self.single_bytes
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
        self.publish(to);
        cur.done += n;
    }

    /// Publishes the slot just filled for `to`.
    pub(super) fn publish(&mut self, to: usize) {
        self.sent[to] += 1;
        self.shared
            .head(self.rank, to)
            .store(self.sent[to], Ordering::Release);
        notify(self.shared.doorbell(to), self.shared.sleeping(to));
    }

    /// Consumes the next published chunk (or single-copy descriptor) from `from` into `out` and
    /// frees its slot.
    pub(crate) fn pop(
        &mut self,
        from: usize,
        out: &mut [u8],
        how: Combine<'_>,
        cur: &mut Cursor,
    ) -> Result<()> {
        let next = self.received[from] + 1;
        let slot = self
            .shared
            .slot(from, self.rank, self.received[from] as usize);
        if self
            .shared
            .descriptor_at(from, self.rank)
            .load(Ordering::Relaxed)
            == next
        {
            // SAFETY: the sender published this slot with a descriptor in it (descriptor_at).
            let d = unsafe { Descriptor::read_from(slot) };
            self.read_single(from, d, out, how, cur)?;
        } else {
            let n = (cur.len - cur.done).min(self.shared.layout.slot_bytes);
            // SAFETY: the slot was published (can_recv) and the sender will not reuse it until
            // the tail store below; n <= slot_bytes.
            let incoming = unsafe { std::slice::from_raw_parts(slot as *const u8, n) };
            how.apply(&mut out[cur.done..cur.done + n], incoming, cur.done);
            cur.done += n;
        }
        self.received[from] = next;
        self.shared
            .tail(from, self.rank)
            .store(next, Ordering::Release);
        notify(self.shared.doorbell(from), self.shared.sleeping(from));
        Ok(())
    }

    /// Sends and receives at once; `copied`: the receiver copies the message as it is, so it
    /// may go single-copy.
    fn exchange(
        &mut self,
        send: Option<Outgoing<'_>>,
        recv: Option<Incoming<'_, '_>>,
        copied: bool,
    ) -> Result<()> {
        let mut outbound = send.map(|(t, d)| (t, d, self.outbound(t, d.len(), copied)));
        let (from, out, how) = match recv {
            Some((f, o, h)) => (Some(f), o, h),
            None => (None, &mut [][..], Combine::Copy),
        };
        let mut rcur = Cursor::new(out.len());
        loop {
            let mut moved = false;
            if let Some((t, data, ob)) = outbound.as_mut() {
                moved |= self.advance(*t, data, ob);
            }
            if let Some(f) = from {
                while !rcur.finished() && self.can_recv(f) {
                    self.pop(f, out, how, &mut rcur)?;
                    moved = true;
                }
            }
            let pending = outbound.as_ref().filter(|(_, _, ob)| !ob.finished());
            if pending.is_none() && rcur.finished() {
                return Ok(());
            }
            if !moved {
                let f = from.filter(|_| !rcur.finished());
                let ready = || {
                    pending.is_some_and(|(t, _, ob)| self.can_move(*t, ob))
                        || f.is_some_and(|f| self.can_recv(f))
                };
                self.wait_until(f.or(pending.map(|(t, _, _)| *t)), ready)?;
            }
        }
    }

    /// Waits until `ready()`; `peer` is the rank named if the wait stalls.
    pub(super) fn wait_until(
        &self,
        peer: Option<usize>,
        ready: impl FnMut() -> bool,
    ) -> Result<()> {
        let sh = &self.shared;
        sh.waiting_on(self.rank)
            .store(peer.map_or(-1, |p| p as i32), Ordering::Relaxed);
        let sleeper = Sleeper {
            doorbell: sh.doorbell(self.rank),
            sleeping: sh.sleeping(self.rank),
            abort: sh.abort_flag(),
        };
        let deadline = self.stall.map(|d| Instant::now() + d);
        let res = sleeper.wait(&self.policy, deadline, ready);
        sh.waiting_on(self.rank).store(-1, Ordering::Relaxed);
        let me = self.names[self.rank];
        res.map_err(|e| match e {
            WaitError::Aborted => Error::Rank(format!("rank {me}: run aborted by the launcher")),
            WaitError::TimedOut => {
                let peer = peer.map_or(String::from("?"), |p| self.names[p].to_string());
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
        self.exchange(send, recv, false)
    }

    fn send_recv_copy(
        &mut self,
        send: Option<Outgoing<'_>>,
        recv: Option<Incoming<'_, '_>>,
    ) -> Result<()> {
        self.exchange(send, recv, true)
    }

    fn exchange_all_while(
        &mut self,
        sends: Many<'_, &[u8]>,
        recvs: Many<'_, &mut [u8]>,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<()> {
        self.exchange_all_shm(sends, recvs, meanwhile)
    }

    fn recv_written_while(
        &mut self,
        recvs: Many<'_, &mut [u8]>,
        meanwhile: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        self.recv_written_shm(recvs, meanwhile)
    }

    fn send_written(&mut self, to: usize, data: &[u8]) -> Result<()> {
        self.send_written_shm(to, data)
    }

    fn mark_progress(&mut self) {
        self.shared
            .progress(self.rank)
            .fetch_add(1, Ordering::Relaxed);
    }
}

mod many;
mod rendezvous;
#[cfg(test)]
mod tests;
mod written;
