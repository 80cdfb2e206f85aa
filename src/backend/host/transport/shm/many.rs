//! Several messages in flight at once ([`Transport::exchange_all`]): every send is offered at
//! the start and every receive taken as soon as its bytes are there, so a rank copies whichever
//! peer's message is ready instead of waiting for one partner per step, and the peers of a root
//! read its messages at the same time. Each message is on its own channel (one per peer and
//! direction), so their order on a channel is never in question.
//!
//! [`Transport::exchange_all`]: crate::backend::host::transport::Transport::exchange_all

use std::ops::Range;

use super::rendezvous::Outbound;
use super::{Cursor, ShmTransport};
use crate::backend::host::transport::{Combine, Many};
use crate::error::Result;

/// One outgoing message of an exchange: its peer, its bytes in the send buffer, its progress.
pub(super) type OutMsg = (usize, Range<usize>, Outbound);

/// One incoming message: its peer, its place in the receive buffer, its progress.
pub(super) type InMsg = (usize, Range<usize>, Cursor);

impl ShmTransport {
    /// `exchange_all_while` over shared memory. Each message's peer, place and progress are
    /// listed once per call in vectors the transport keeps, so a call allocates nothing once
    /// they have grown.
    pub(super) fn exchange_all_shm(
        &mut self,
        sends: Many<'_, &[u8]>,
        recvs: Many<'_, &mut [u8]>,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<()> {
        let (mut outs, mut ins) = (
            std::mem::take(&mut self.outs),
            std::mem::take(&mut self.ins),
        );
        outs.clear();
        ins.clear();
        for i in 0..sends.count {
            let (to, r) = (sends.at)(i);
            let ob = self.outbound(to, r.len(), true);
            outs.push((to, r, ob));
        }
        for i in 0..recvs.count {
            let (from, r) = (recvs.at)(i);
            let cur = Cursor::new(r.len());
            ins.push((from, r, cur));
        }
        let done = self.drive(sends.buf, recvs.buf, &mut outs, &mut ins, meanwhile);
        (self.outs, self.ins) = (outs, ins);
        done
    }

    /// Moves every message on until all are through, waiting while none can move; runs
    /// `meanwhile` once, after the first round of offers.
    fn drive(
        &mut self,
        input: &[u8],
        output: &mut [u8],
        outs: &mut [OutMsg],
        ins: &mut [InMsg],
        meanwhile: &mut dyn FnMut(),
    ) -> Result<()> {
        let mut first = true;
        loop {
            let mut moved = false;
            for (to, r, ob) in outs.iter_mut() {
                moved |= self.advance(*to, &input[r.clone()], ob);
            }
            if std::mem::take(&mut first) {
                // Every send has been offered (those whose channel had room): peers read them
                // while this rank does its own work.
                meanwhile();
            }
            for (from, r, cur) in ins.iter_mut() {
                while !cur.finished() && self.can_recv(*from) {
                    self.pop(*from, &mut output[r.clone()], Combine::Copy, cur)?;
                    moved = true;
                }
            }
            let sending = outs.iter().find(|(_, _, ob)| !ob.finished());
            let receiving = ins.iter().find(|(_, _, c)| !c.finished());
            if sending.is_none() && receiving.is_none() {
                return Ok(());
            }
            if !moved {
                let ready = || {
                    outs.iter().any(|(to, _, ob)| self.can_move(*to, ob))
                        || ins
                            .iter()
                            .any(|(from, _, c)| !c.finished() && self.can_recv(*from))
                };
                let peer = receiving.map(|m| m.0).or(sending.map(|m| m.0));
                self.wait_until(peer, ready)?;
            }
        }
    }
}
