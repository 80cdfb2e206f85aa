//! The point-to-point interface the host algorithms are written against. A transport moves bytes
//! between two ranks in order; the receiver decides what to do with each arriving chunk (copy it,
//! or reduce it into its buffer) so reductions need no staging buffer of their own.

pub mod hybrid;
pub mod shm;
pub mod single_copy;
pub mod tcp;

use std::ops::Range;

use crate::backend::host::reduce::{reduce3, reduce_into};
use crate::collective::{DType, ReduceOp};
use crate::error::Result;

/// What the receiver does with incoming bytes.
#[derive(Clone, Copy, Debug)]
pub enum Combine<'a> {
    /// `out = incoming`.
    Copy,
    /// `out = out (op) incoming`.
    Reduce { dtype: DType, op: ReduceOp },
    /// `out = local (op) incoming`; `local` has the length of `out`.
    ReduceWith {
        dtype: DType,
        op: ReduceOp,
        local: &'a [u8],
    },
}

impl Combine<'_> {
    /// Combines `incoming` into `dst`, which starts at byte `at` of the message.
    pub fn apply(self, dst: &mut [u8], incoming: &[u8], at: usize) {
        match self {
            Combine::Copy => dst.copy_from_slice(incoming),
            Combine::Reduce { dtype, op } => reduce_into(dtype, op, dst, incoming),
            Combine::ReduceWith { dtype, op, local } => {
                reduce3(dtype, op, dst, &local[at..at + dst.len()], incoming)
            }
        }
    }
}

/// One side of [`Transport::exchange_all`]: `count` messages, message `i` to or from rank
/// `at(i).0` over bytes `at(i).1` of `buf` (the ranges of received messages do not overlap, and
/// no two messages of one side have the same peer).
pub struct Many<'a, B> {
    pub count: usize,
    pub at: &'a dyn Fn(usize) -> (usize, Range<usize>),
    pub buf: B,
}

impl<B: Default> Many<'_, B> {
    /// No messages.
    pub fn none() -> Self {
        Many {
            count: 0,
            at: &|_| (0, 0..0),
            buf: B::default(),
        }
    }
}

/// One outgoing message: destination rank and bytes.
pub type Outgoing<'a> = (usize, &'a [u8]);

/// One incoming message: source rank, destination buffer and what to do with the bytes.
pub type Incoming<'a, 'b> = (usize, &'a mut [u8], Combine<'b>);

/// Ordered, reliable byte streams between every pair of ranks. Both sides of a pair must agree
/// on the sequence and sizes of messages (the algorithms guarantee it).
pub trait Transport {
    /// This process's global rank.
    fn rank(&self) -> usize;

    /// Ranks in the launch.
    fn nranks(&self) -> usize;

    /// Sends and receives at the same time, chunk by chunk, so that a ring in which every rank
    /// sends to its right and receives from its left cannot deadlock on full channels.
    fn send_recv(
        &mut self,
        send: Option<Outgoing<'_>>,
        recv: Option<Incoming<'_, '_>>,
    ) -> Result<()>;

    /// [`send_recv`](Transport::send_recv) for messages the receiver copies as they are
    /// (`Combine::Copy`): a transport may then let the receiver read them straight from the
    /// sender's buffer, one copy instead of two (the shared-memory transport does, for large ones;
    /// see `single_copy`). The sender's call then returns only once the receiver has them.
    fn send_recv_copy(
        &mut self,
        send: Option<Outgoing<'_>>,
        recv: Option<Incoming<'_, '_>>,
    ) -> Result<()> {
        self.send_recv(send, recv)
    }

    /// Sends every message of `sends` and receives every one of `recvs` (copied as they are), in
    /// whatever order the transport can make progress: one that keeps several messages in
    /// flight (shared memory) lets a rank serve whichever peer is ready, and a root's peers read
    /// its messages at the same time. The default sends message i with receive i, one pair at a
    /// time (so lists in a deadlock-free order stay deadlock-free on every transport).
    fn exchange_all(&mut self, sends: Many<'_, &[u8]>, recvs: Many<'_, &mut [u8]>) -> Result<()> {
        self.exchange_all_while(sends, recvs, &mut || {})
    }

    /// [`exchange_all`](Transport::exchange_all), running `meanwhile` once on the way: a
    /// transport whose peers read the sent bytes themselves (shared memory, single-copy) runs it
    /// once every send is offered, so this rank's own work (a root's copy of its own block)
    /// overlaps the peers' reads; the default runs it first.
    fn exchange_all_while(
        &mut self,
        sends: Many<'_, &[u8]>,
        recvs: Many<'_, &mut [u8]>,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<()> {
        meanwhile();
        let Many { count, at, buf } = recvs;
        for i in 0..sends.count.max(count) {
            let send = (i < sends.count).then(|| {
                let (to, r) = (sends.at)(i);
                (to, &sends.buf[r])
            });
            let recv = match i < count {
                true => {
                    let (from, r) = at(i);
                    Some((from, &mut buf[r], Combine::Copy))
                }
                false => None,
            };
            self.send_recv_copy(send, recv)?;
        }
        Ok(())
    }

    /// Receives every message of `recvs` (copied as they are), each written into place by its
    /// sender where the transport can, and runs `meanwhile` on the buffer once they are asked for: over
    /// shared memory each sender copies its own bytes on its own core (single-copy writes), so
    /// a root that gathers from many ranks only does its own work (`meanwhile`: its own block,
    /// which no message covers) while they write. Each sender sends these messages with
    /// [`send_written`](Transport::send_written), in the order listed here. The default runs
    /// `meanwhile` first, then receives them as [`exchange_all`](Transport::exchange_all) does.
    fn recv_written_while(
        &mut self,
        recvs: Many<'_, &mut [u8]>,
        meanwhile: &mut dyn FnMut(&mut [u8]),
    ) -> Result<()> {
        let Many { count, at, buf } = recvs;
        meanwhile(buf);
        self.exchange_all(Many::none(), Many { count, at, buf })
    }

    /// Sends `data` to `to`, which receives it with
    /// [`recv_written_while`](Transport::recv_written_while).
    fn send_written(&mut self, to: usize, data: &[u8]) -> Result<()> {
        self.send_recv_copy(Some((to, data)), None)
    }

    /// Sends `data` to `to`.
    fn send(&mut self, to: usize, data: &[u8]) -> Result<()> {
        self.send_recv(Some((to, data)), None)
    }

    /// Receives `out.len()` bytes from `from`, combined into `out` as `how` says.
    fn recv(&mut self, from: usize, out: &mut [u8], how: Combine<'_>) -> Result<()> {
        self.send_recv(None, Some((from, out, how)))
    }

    /// Records that this rank completed one more iteration (for the launcher's watchdog).
    fn mark_progress(&mut self);
}
