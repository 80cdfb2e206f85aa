//! The point-to-point interface the host algorithms are written against. A transport moves bytes
//! between two ranks in order; the receiver decides what to do with each arriving chunk (copy it,
//! or reduce it into its buffer) so reductions need no staging buffer of their own.

pub mod hybrid;
pub mod shm;
pub mod single_copy;
pub mod tcp;

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
