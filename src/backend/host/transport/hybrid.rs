//! The transport of a multi-host launch: shared memory to the ranks on this host, TCP to the
//! others, chosen per peer, as NCCL uses SHM within a node and the network between nodes.
//!
//! An exchange whose send and receive both go one way is handed to that transport whole. A
//! mixed one (in a ring, the rank at a node's edge sends over one and receives over the other)
//! runs in the TCP transport's loop, which also moves the shared-memory half chunk by chunk, so
//! neither half waits for the other to finish: waiting for one before starting the other could
//! deadlock a ring whose messages exceed what the channels buffer.

use super::shm::{Cursor, ShmTransport};
use super::tcp::TcpTransport;
use super::{Incoming, Outgoing, Transport};
use crate::error::Result;

/// Shared memory within the node, TCP across nodes.
pub struct HybridTransport {
    tcp: TcpTransport,
    /// The node's shared-memory transport, when this node has other ranks and shm is wanted.
    shm: Option<ShmTransport>,
    /// Each global rank's index in this node's segment, for ranks on this node.
    local: Vec<Option<usize>>,
}

impl HybridTransport {
    /// TCP to every peer, and `shm` (whose rank `i` is global rank `local_ranks[i]`) to the
    /// ranks of this node.
    pub fn new(tcp: TcpTransport, shm: Option<(ShmTransport, Vec<usize>)>) -> HybridTransport {
        let mut local = vec![None; tcp.nranks()];
        let shm = shm.map(|(t, ranks)| {
            for (i, &r) in ranks.iter().enumerate() {
                local[r] = Some(i);
            }
            t
        });
        HybridTransport { tcp, shm, local }
    }

    /// The TCP mesh, for control messages that must not go through shared memory.
    pub fn tcp(&mut self) -> &mut TcpTransport {
        &mut self.tcp
    }

    /// Whether any peer is reached through shared memory.
    pub fn uses_shm(&self) -> bool {
        self.shm.is_some()
    }

    fn via_shm(&self, peer: usize) -> Option<usize> {
        self.shm.as_ref()?;
        self.local.get(peer).copied().flatten()
    }
}

impl Transport for HybridTransport {
    fn rank(&self) -> usize {
        self.tcp.rank()
    }

    fn nranks(&self) -> usize {
        self.tcp.nranks()
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

    fn mark_progress(&mut self) {
        self.tcp.mark_progress();
    }
}

impl HybridTransport {
    /// Sends and receives, each half over the transport that reaches its peer; `copied` as in
    /// `send_recv_copy` (it matters to shared memory only).
    fn exchange(
        &mut self,
        send: Option<Outgoing<'_>>,
        recv: Option<Incoming<'_, '_>>,
        copied: bool,
    ) -> Result<()> {
        let s_local = send.map(|(to, _)| self.via_shm(to));
        let r_local = recv.as_ref().map(|(from, _, _)| self.via_shm(*from));
        let (Some(shm), all_shm, any_shm) = (
            self.shm.as_mut(),
            s_local.map_or(true, |l| l.is_some()) && r_local.map_or(true, |l| l.is_some()),
            s_local.flatten().is_some() || r_local.flatten().is_some(),
        ) else {
            return self.tcp.send_recv(send, recv);
        };
        if all_shm {
            let send = send.zip(s_local.flatten()).map(|((_, d), l)| (l, d));
            let recv = recv.zip(r_local.flatten()).map(|((_, o, h), l)| (l, o, h));
            return match copied {
                true => shm.send_recv_copy(send, recv),
                false => shm.send_recv(send, recv),
            };
        }
        if !any_shm {
            return self.tcp.send_recv(send, recv);
        }
        mixed(
            &mut self.tcp,
            shm,
            send,
            recv,
            s_local.flatten(),
            r_local.flatten(),
        )
    }
}

/// One half over shared memory (`s_local` or `r_local` names its local peer), the other over
/// TCP, moved together.
fn mixed(
    tcp: &mut TcpTransport,
    shm: &mut ShmTransport,
    send: Option<Outgoing<'_>>,
    recv: Option<Incoming<'_, '_>>,
    s_local: Option<usize>,
    r_local: Option<usize>,
) -> Result<()> {
    if let (Some(to), Some((_, data))) = (s_local, send) {
        let mut cur = Cursor::new(data.len());
        let mut half = || {
            let mut moved = false;
            while !cur.finished() && shm.can_send(to) {
                shm.push(to, data, &mut cur);
                moved = true;
            }
            Ok((moved, cur.finished()))
        };
        return tcp.drive(None, recv, &mut half);
    }
    let (Some(from), Some((_, out, how))) = (r_local, recv) else {
        return tcp.send_recv(send, None);
    };
    let mut cur = Cursor::new(out.len());
    let mut half = || {
        let mut moved = false;
        while !cur.finished() && shm.can_recv(from) {
            shm.pop(from, out, how, &mut cur)?;
            moved = true;
        }
        Ok((moved, cur.finished()))
    };
    tcp.drive(send, None, &mut half)
}
