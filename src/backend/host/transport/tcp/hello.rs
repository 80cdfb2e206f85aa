//! The handshake that opens every mesh connection (magic, token, rank, ranks: the same shape
//! both ways) and the socket options every connection gets, shared by the side that dials
//! ([`super::mesh`]) and the side that accepts ([`super::accept`]).

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::OnceLock;

/// Opens every handshake and names its version; a connection that starts otherwise is dropped.
pub(super) const MAGIC: [u8; 8] = *b"CLBTCP01";

/// Bytes of a hello (connecting side) or an answer (accepting side): magic, token, rank, ranks.
pub(super) const HELLO_LEN: usize = 24;

/// Requested send and receive buffer of every connection.
pub(super) const SOCKET_BUFFER: usize = 4 << 20;

/// The handshake message, the same shape in both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hello {
    pub token: u64,
    pub rank: u32,
    pub nranks: u32,
}

impl Hello {
    pub(super) fn encode(self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..16].copy_from_slice(&self.token.to_le_bytes());
        b[16..20].copy_from_slice(&self.rank.to_le_bytes());
        b[20..24].copy_from_slice(&self.nranks.to_le_bytes());
        b
    }

    /// None when the bytes do not start with the magic.
    pub(super) fn decode(b: &[u8; HELLO_LEN]) -> Option<Hello> {
        if b[..8] != MAGIC {
            return None;
        }
        let mut token = [0u8; 8];
        token.copy_from_slice(&b[8..16]);
        let mut rank = [0u8; 4];
        rank.copy_from_slice(&b[16..20]);
        let mut nranks = [0u8; 4];
        nranks.copy_from_slice(&b[20..24]);
        Some(Hello {
            token: u64::from_le_bytes(token),
            rank: u32::from_le_bytes(rank),
            nranks: u32::from_le_bytes(nranks),
        })
    }
}

/// TCP_NODELAY and large buffers on a connection.
pub(super) fn tune(s: &TcpStream) -> io::Result<()> {
    s.set_nodelay(true)?;
    set_buffers(s.as_raw_fd());
    Ok(())
}

/// Asks for [`SOCKET_BUFFER`] bytes of send and receive buffer, but only where the kernel grants
/// it in full (`net.core.wmem_max` / `rmem_max`): a size set by hand turns Linux's buffer
/// autotuning off, so a request clipped to a small limit would do worse than leaving it alone.
pub(super) fn set_buffers(fd: RawFd) {
    static GRANTED: OnceLock<[bool; 2]> = OnceLock::new();
    let granted = GRANTED.get_or_init(|| {
        ["/proc/sys/net/core/wmem_max", "/proc/sys/net/core/rmem_max"].map(|limit| {
            std::fs::read_to_string(limit)
                .ok()
                .and_then(|s| s.trim().parse::<usize>().ok())
                .map_or(true, |max| max >= SOCKET_BUFFER)
        })
    });
    for (opt, &allowed) in [libc::SO_SNDBUF, libc::SO_RCVBUF].iter().zip(granted) {
        if allowed {
            let size = SOCKET_BUFFER as libc::c_int;
            // SAFETY: fd is an open socket; the option value is a live c_int of the given size.
            // Failure only leaves the default size, so the result is ignored.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    *opt,
                    (&size as *const libc::c_int).cast(),
                    size_of::<libc::c_int>() as libc::socklen_t,
                );
            }
        }
    }
}
