//! Messages the sender writes straight into the receiver's buffer
//! ([`Transport::recv_written_while`], [`Transport::send_written`]): the receiver offers where
//! each message goes, in one slot of its channel to the sender; the sender writes its bytes there
//! by cross-memory attach (`process_vm_writev`) and frees the slot with the outcome in it. A root
//! that gathers from many ranks then copies none of their bytes itself: each sender copies its
//! own block on its own core while the root copies its own.
//!
//! Whether a message goes this way depends only on the copy mode and its size, so both ends agree
//! without asking. A receiver that knows the channel refuses cross-memory copies offers "send it
//! through the slots" instead of an address; a sender whose write the kernel refuses marks the
//! channel refused, answers the offer with that, and sends the message through the slots (which
//! overwrite whatever part the failed write left).
//!
//! [`Transport::recv_written_while`]: crate::backend::host::transport::Transport::recv_written_while
//! [`Transport::send_written`]: crate::backend::host::transport::Transport::send_written

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::ShmTransport;
use crate::backend::host::transport::single_copy::{write_remote, Descriptor};
use crate::backend::host::transport::{Combine, Many};
use crate::backend::host::wait::notify;
use crate::error::{Error, Result};

/// One offered message: its sender, its place in the receive buffer, and the sequence number of
/// the slot its offer went out in (`None`: it comes the ordinary way).
pub(super) type Offer = (usize, Range<usize>, Option<u64>);

/// Where an offer's state sits in its slot, after the descriptor.
const STATUS_AT: usize = Descriptor::BYTES;
/// Offered, not answered yet (a tag, so a sender that finds anything else in the slot knows the
/// ranks disagree on the collective).
const OFFERED: u64 = 0x6f66_6665_7265_6421;
/// The sender wrote the bytes.
const WRITTEN: u64 = 1;
/// The bytes come through the slots.
const STAGED: u64 = 2;

impl ShmTransport {
    /// `recv_written_while` over shared memory: every offer first, then `meanwhile`, then each
    /// message in turn.
    pub(super) fn recv_written_shm(
        &mut self,
        recvs: Many<'_, &mut [u8]>,
        meanwhile: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        let Many { count, at, buf } = recvs;
        let base = buf.as_mut_ptr() as usize;
        let mut offers = std::mem::take(&mut self.offers);
        offers.clear();
        let res = self
            .offer_all((count, at), base, &mut offers)
            .and_then(|()| {
                meanwhile(buf);
                self.collect(buf, &offers)
            });
        self.offers = offers;
        res
    }

    /// Lists the `count` messages `at` names in `offers`, offering a place at `base` + its
    /// range to each sender whose message goes single-copy.
    fn offer_all(
        &mut self,
        (count, at): (usize, &dyn Fn(usize) -> (usize, Range<usize>)),
        base: usize,
        offers: &mut Vec<Offer>,
    ) -> Result<()> {
        for i in 0..count {
            let (from, r) = at(i);
            let mut seq = None;
            if self.single_copy_wanted(r.len(), true) {
                self.wait_until(Some(from), || self.can_send(from))?;
                seq = Some(self.offer(from, base + r.start, r.len()));
            }
            offers.push((from, r, seq));
        }
        Ok(())
    }

    /// Offers `len` bytes at `addr` of this process to `from`; the offer's sequence number.
    fn offer(&mut self, from: usize, addr: usize, len: usize) -> u64 {
        let sh = &self.shared;
        let refused = sh
            .single_copy_refused(from, self.rank)
            .load(Ordering::Relaxed)
            != 0;
        let pid = if refused { 0 } else { self.pid };
        let slot = sh.slot(self.rank, from, self.sent[from] as usize);
        // SAFETY: the slot is free (can_send) and holds more than Descriptor::BYTES + 8 bytes.
        unsafe {
            Descriptor { pid, addr, len }.write_to(slot);
            (slot.add(STATUS_AT) as *mut u64).write_unaligned(OFFERED);
        }
        self.publish(from);
        self.sent[from]
    }

    /// Waits for each offered message in turn; one its sender did not write comes through the
    /// slots (or single-copy read, as the mode says).
    fn collect(&mut self, buf: &mut [u8], offers: &[Offer]) -> Result<()> {
        for (from, r, seq) in offers {
            let from = *from;
            if let Some(seq) = *seq {
                let me = self.rank;
                let answered = || self.shared.tail(me, from).load(Ordering::Acquire) >= seq;
                self.wait_until(Some(from), answered)?;
                let slot = self.shared.slot(me, from, seq as usize - 1);
                // SAFETY: the sender answered in the slot before freeing it (the Acquire above);
                // this rank reuses the slot only with its next message to `from`.
                let status = unsafe { (slot.add(STATUS_AT) as *const u64).read_unaligned() };
                if status == WRITTEN {
                    self.single_bytes += r.len() as u64;
                    continue;
                }
            }
            let recv = (from, &mut buf[r.clone()], Combine::Copy);
            self.exchange(None, Some(recv), true)?;
        }
        Ok(())
    }

    /// `send_written` over shared memory: takes the receiver's offer and writes the bytes where it
    /// says, or sends them through the slots.
    pub(super) fn send_written_shm(&mut self, to: usize, data: &[u8]) -> Result<()> {
        if !self.single_copy_wanted(data.len(), true) {
            return self.exchange(Some((to, data)), None, true);
        }
        self.wait_until(Some(to), || self.can_recv(to))?;
        let next = self.received[to] + 1;
        let slot = self.shared.slot(to, self.rank, self.received[to] as usize);
        // SAFETY: the slot is published (can_recv) and stays ours until the tail store below; it
        // holds more than Descriptor::BYTES + 8 bytes.
        let (d, state) = unsafe {
            let state = (slot.add(STATUS_AT) as *const u64).read_unaligned();
            (Descriptor::read_from(slot), state)
        };
        if state != OFFERED || d.len != data.len() {
            return Err(Error::Rank(format!(
                "rank {}: rank {} offered no place for a message of {} bytes (the ranks disagree \
                 on the collective)",
                self.names[self.rank],
                self.names[to],
                data.len()
            )));
        }
        let status = match d.pid {
            0 => STAGED,
            pid => match write_remote(pid, d.addr, data) {
                Ok(()) => WRITTEN,
                Err(e) => self.refuse_write(to, &e),
            },
        };
        // SAFETY: as above; the receiver reads the status only after the tail store.
        unsafe { (slot.add(STATUS_AT) as *mut u64).write_unaligned(status) };
        self.received[to] = next;
        self.shared
            .tail(to, self.rank)
            .store(next, Ordering::Release);
        notify(self.shared.doorbell(to), self.shared.sleeping(to));
        match status {
            WRITTEN => Ok(()),
            _ => self.exchange(Some((to, data)), None, true),
        }
    }

    /// Marks channel `self → to` refused after a failed write (and notes it once per launch).
    fn refuse_write(&mut self, to: usize, e: &std::io::Error) -> u64 {
        self.refuse_channel((self.rank, to), "write", e);
        STAGED
    }
}
