//! The single-copy half of the shared-memory transport (see
//! [`single_copy`](super::super::single_copy)): the sender posts a descriptor and waits for its
//! slot to be freed; the receiver reads the bytes from the sender's buffer, or marks the channel
//! refused so the sender stages them instead.

use std::sync::atomic::Ordering;

use super::{Cursor, ShmTransport};
use crate::backend::host::transport::single_copy::{
    read_remote, CopyMode, Descriptor, AUTO_MIN_BYTES,
};
use crate::backend::host::transport::Combine;
use crate::error::{Error, Result};

/// Where an outgoing message stands.
pub(super) enum Outbound {
    /// Waiting for a free slot to publish its descriptor in.
    Offer,
    /// Descriptor published; done when the receiver frees its slot.
    Posted,
    /// Going through the slots chunk by chunk.
    Staged(Cursor),
    Done,
}

impl Outbound {
    pub(super) fn finished(&self) -> bool {
        match self {
            Outbound::Done => true,
            Outbound::Staged(cur) => cur.finished(),
            _ => false,
        }
    }
}

impl ShmTransport {
    /// Publishes where `data` is, for `to` to read it single-copy.
    pub(super) fn post(&mut self, to: usize, data: &[u8]) {
        let slot = self.shared.slot(self.rank, to, self.sent[to] as usize);
        // SAFETY: the slot is free (checked by can_send) and holds more than Descriptor::BYTES.
        unsafe { Descriptor::of(self.pid, data).write_to(slot) };
        let at = self.shared.descriptor_at(self.rank, to);
        at.store(self.sent[to] + 1, Ordering::Relaxed);
        self.publish(to);
    }

    /// Whether `to` has freed every slot this rank published to it.
    pub(super) fn drained(&self, to: usize) -> bool {
        self.shared.tail(self.rank, to).load(Ordering::Acquire) >= self.sent[to]
    }

    /// How a message of `len` bytes to `to` starts: single-copy when the mode wants it for such
    /// a message (`copied`: the receiver copies it as it is) and the receiver has not refused
    /// single-copy reads.
    pub(super) fn outbound(&self, to: usize, len: usize, copied: bool) -> Outbound {
        let wanted = self.single_copy_wanted(len, copied);
        let refused = self.shared.single_copy_refused(self.rank, to);
        if wanted && refused.load(Ordering::Relaxed) == 0 {
            Outbound::Offer
        } else {
            Outbound::Staged(Cursor::new(len))
        }
    }

    /// Whether the mode moves a message of `len` bytes single-copy (read by the receiver, or
    /// written by the sender), before asking whether the channel refuses it; `copied`: the
    /// receiver copies it as it is. Both ends of a message decide alike from these alone.
    pub(super) fn single_copy_wanted(&self, len: usize, copied: bool) -> bool {
        match self.mode {
            CopyMode::Staged => false,
            CopyMode::Auto => copied && len >= AUTO_MIN_BYTES,
            CopyMode::Single => len > 0,
        }
    }

    /// Whether `out` (to `to`) could move on now: a free slot for an offer or a staged chunk, or
    /// every slot freed for a posted single-copy message (it has been read).
    pub(super) fn can_move(&self, to: usize, out: &Outbound) -> bool {
        match out {
            Outbound::Posted => self.drained(to),
            Outbound::Done => false,
            Outbound::Offer | Outbound::Staged(_) => !out.finished() && self.can_send(to),
        }
    }

    /// Moves an outgoing message on as far as it can without waiting; true if anything moved.
    pub(super) fn advance(&mut self, to: usize, data: &[u8], out: &mut Outbound) -> bool {
        match out {
            Outbound::Offer if self.can_send(to) => {
                self.post(to, data);
                *out = Outbound::Posted;
                true
            }
            Outbound::Posted if self.drained(to) => {
                let refused = self.shared.single_copy_refused(self.rank, to);
                *out = match refused.load(Ordering::Relaxed) {
                    0 => Outbound::Done,
                    _ => Outbound::Staged(Cursor::new(data.len())),
                };
                true
            }
            Outbound::Staged(cur) => {
                let mut moved = false;
                while !cur.finished() && self.can_send(to) {
                    self.push(to, data, cur);
                    moved = true;
                }
                moved
            }
            _ => false,
        }
    }

    /// Reads a message from the sender's buffer. If the kernel refuses the first read, marks the
    /// channel refused (the sender then stages the message, and the cursor stays put).
    pub(super) fn read_single(
        &mut self,
        from: usize,
        d: Descriptor,
        out: &mut [u8],
        how: Combine<'_>,
        cur: &mut Cursor,
    ) -> Result<()> {
        debug_assert_eq!(d.len, cur.len - cur.done, "message sizes disagree");
        let len = d.len.min(cur.len - cur.done);
        let dst = &mut out[cur.done..cur.done + len];
        let res = match how {
            Combine::Copy => read_remote(d.pid, d.addr, dst).map_err(|e| (e, 0)),
            _ => self.read_combining(d, dst, how, cur.done),
        };
        match res {
            Ok(()) => {
                cur.done += len;
                self.single_bytes += len as u64;
                Ok(())
            }
            Err((e, 0)) => {
                self.refuse(from, &e);
                Ok(())
            }
            Err((e, at)) => Err(Error::Rank(format!(
                "rank {}: reading rank {}'s message failed after {at} bytes: {e}",
                self.names[self.rank], self.names[from]
            ))),
        }
    }

    /// Reads a message a slot's size at a time into the landing buffer and combines each piece
    /// into `dst` (which starts at byte `at` of the message) while it is in cache. On failure,
    /// says how many bytes were combined already (a retry through the slots must find none).
    fn read_combining(
        &mut self,
        d: Descriptor,
        dst: &mut [u8],
        how: Combine<'_>,
        at: usize,
    ) -> std::result::Result<(), (std::io::Error, usize)> {
        let piece = self.shared.layout.slot_bytes;
        if self.landing.len() < piece {
            self.landing.resize(piece, 0);
        }
        for off in (0..dst.len()).step_by(piece) {
            let n = piece.min(dst.len() - off);
            let incoming = &mut self.landing[..n];
            read_remote(d.pid, d.addr + off, incoming).map_err(|e| (e, off))?;
            how.apply(&mut dst[off..off + n], incoming, at + off);
        }
        Ok(())
    }

    /// Marks channel `from → self` refused and prints the launch's one note about it.
    fn refuse(&mut self, from: usize, e: &std::io::Error) {
        self.refuse_channel((from, self.rank), "read", e);
    }

    /// Marks channel `from → to` refused (this rank could not `verb` the other's memory, so
    /// messages on it go through the slots) and prints the launch's one note about it.
    pub(super) fn refuse_channel(
        &self,
        (from, to): (usize, usize),
        verb: &str,
        e: &std::io::Error,
    ) {
        let sh = &self.shared;
        sh.single_copy_refused(from, to).store(1, Ordering::Relaxed);
        if sh.fallback_noted().swap(1, Ordering::Relaxed) == 0 {
            let other = if from == self.rank { to } else { from };
            crate::say!(
                "collbench: note: rank {} cannot {verb} rank {}'s memory ({e}); large messages \
                 go through the shared-memory slots instead (two copies instead of one, same \
                 results)",
                self.names[self.rank],
                self.names[other]
            );
        }
    }
}
