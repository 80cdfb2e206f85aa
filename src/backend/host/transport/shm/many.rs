//! Several messages in flight at once ([`Transport::exchange_all`]): every send is offered at
//! the start and every receive taken as soon as its bytes are there, so a rank copies whichever
//! peer's message is ready instead of waiting for one partner per step, and the peers of a root
//! read its messages at the same time. Each message is on its own channel (one per peer and
//! direction), so their order on a channel is never in question.

use super::rendezvous::Outbound;
use super::{Cursor, ShmTransport};
use crate::backend::host::transport::{Combine, Many};
use crate::error::Result;

impl ShmTransport {
    /// [`Transport::exchange_all`] over shared memory. The progress of each message lives in
    /// vectors the transport keeps between calls, so a call allocates nothing once they have
    /// grown.
    ///
    /// [`Transport::exchange_all`]: crate::backend::host::transport::Transport::exchange_all
    pub(super) fn exchange_all_shm(
        &mut self,
        sends: Many<'_, &[u8]>,
        recvs: Many<'_, &mut [u8]>,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<()> {
        let (mut outs, mut curs) = (
            std::mem::take(&mut self.outs),
            std::mem::take(&mut self.curs),
        );
        outs.clear();
        curs.clear();
        for i in 0..sends.count {
            let (to, r) = (sends.at)(i);
            outs.push(self.outbound(to, r.len(), true));
        }
        curs.extend((0..recvs.count).map(|i| Cursor::new((recvs.at)(i).1.len())));
        let done = self.drive(&sends, recvs, &mut outs, &mut curs, meanwhile);
        (self.outs, self.curs) = (outs, curs);
        done
    }

    /// Moves every message on until all are through, waiting while none can move; runs
    /// `meanwhile` once, after the first round of offers.
    fn drive(
        &mut self,
        sends: &Many<'_, &[u8]>,
        recvs: Many<'_, &mut [u8]>,
        outs: &mut [Outbound],
        curs: &mut [Cursor],
        meanwhile: &mut dyn FnMut(),
    ) -> Result<()> {
        let Many { at, buf, .. } = recvs;
        let mut first = true;
        loop {
            let mut moved = false;
            for (i, ob) in outs.iter_mut().enumerate() {
                let (to, r) = (sends.at)(i);
                moved |= self.advance(to, &sends.buf[r], ob);
            }
            if std::mem::take(&mut first) {
                // Every send has been offered (those whose channel had room): peers read them
                // while this rank does its own work.
                meanwhile();
            }
            for (i, cur) in curs.iter_mut().enumerate() {
                let (from, r) = at(i);
                while !cur.finished() && self.can_recv(from) {
                    self.pop(from, &mut buf[r.clone()], Combine::Copy, cur)?;
                    moved = true;
                }
            }
            let sending = outs.iter().position(|ob| !ob.finished());
            let receiving = curs.iter().position(|c| !c.finished());
            if sending.is_none() && receiving.is_none() {
                return Ok(());
            }
            if !moved {
                let ready = || {
                    outs.iter().enumerate().any(|(i, ob)| {
                        let to = (sends.at)(i).0;
                        match ob {
                            Outbound::Offer | Outbound::Staged(_) => {
                                !ob.finished() && self.can_send(to)
                            }
                            Outbound::Posted => self.drained(to),
                            Outbound::Done => false,
                        }
                    }) || curs
                        .iter()
                        .enumerate()
                        .any(|(i, c)| !c.finished() && self.can_recv(at(i).0))
                };
                let peer = match receiving {
                    Some(i) => Some(at(i).0),
                    None => sending.map(|i| (sends.at)(i).0),
                };
                self.wait_until(peer, ready)?;
            }
        }
    }
}
