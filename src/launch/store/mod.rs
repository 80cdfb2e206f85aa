//! A small TCP rendezvous store, served by rank 0, through which ranks on many hosts exchange
//! what they need to connect to each other (listener addresses, host names).
//!
//! * [`StoreServer::bind`] on rank 0 serves from background threads until dropped; dropping it
//!   fails every waiting operation, closes every connection and joins every thread.
//! * [`StoreClient::connect`] on every rank (rank 0 included) retries until its timeout, so
//!   ranks may start before rank 0's store does.
//! * Operations: [`set`](StoreClient::set), [`get`](StoreClient::get) (waits until set),
//!   [`barrier`](StoreClient::barrier) and [`all_gather`](StoreClient::all_gather) (every rank's
//!   value, in rank order), each bounded by the client's timeout.
//!
//! Safety rails: the first message of a connection is a hello carrying the job's token and the
//! rank; the server refuses a wrong token (compared in constant time), a rank out of range or
//! a rank already connected. Hellos are read side by side by the accepting thread: at most 64
//! connections wait for theirs, each at most 10 s (or the store's timeout if shorter), and a
//! rank gets its own thread only once admitted, so idle or hostile peers cannot exhaust the
//! ranks' slots. Every refused peer is logged on stderr with its address and reason (the first
//! 100), and "rank N never connected" says whether a peer claiming rank N was refused. Keys are at most [`MAX_KEY`] bytes and values [`MAX_VALUE`]; a
//! longer message is refused from its length prefix, before anything is allocated. Every read
//! and write of a started message has a deadline; the server waits without limit only for the
//! next request of an idle rank, and TCP keepalive notices a peer whose host died. A rank that
//! vanishes (connection closed without the goodbye that [`StoreClient::close`] or dropping the
//! client sends) makes every operation that waits on it fail at once with an error naming it.

mod client;
mod proto;
mod server;

#[cfg(test)]
mod hostile_tests;
#[cfg(test)]
mod proto_props;
#[cfg(test)]
pub(crate) use hostile_tests::enough_descriptors;
#[cfg(test)]
mod tests;

use std::io::Read;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

pub use client::StoreClient;
pub use server::StoreServer;

use crate::error::{Error, Result};

/// The longest key or barrier/gather name, in bytes.
pub const MAX_KEY: usize = 256;
/// The largest value, in bytes (1 MiB).
pub const MAX_VALUE: usize = 1 << 20;
/// The longest token, in bytes.
pub const MAX_TOKEN: usize = crate::launch::env::MAX_TOKEN_BYTES;

/// A fresh random token for one job, from the kernel's random source (getrandom(2), else
/// /dev/urandom). Give it to every rank as `COLLBENCH_TOKEN` (`format!("{t:016x}")`) and to the
/// store as `t.to_be_bytes()`, which is what [`crate::launch::env::parse_token`] decodes.
///
/// # Panics
/// When the system offers no randomness at all; [`try_random_token`] reports that instead.
pub fn random_token() -> u64 {
    try_random_token().expect("no random source for the store token")
}

/// [`random_token`], reporting a missing random source as an error.
pub fn try_random_token() -> Result<u64> {
    let mut buf = [0u8; 8];
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: writes at most rest.len() bytes into rest.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            filled += n as usize;
            continue;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        // ENOSYS (kernel before 3.17) or a seccomp filter: read the device instead.
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut buf))
            .map_err(|e| Error::io("/dev/urandom", e))?;
        break;
    }
    Ok(u64::from_ne_bytes(buf))
}

/// Compares tokens in time that depends only on their lengths, never on where they differ.
fn same_token(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for i in 0..a.len().max(b.len()) {
        diff |= a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
    }
    std::hint::black_box(diff) == 0
}

/// Turns on TCP keepalive (probe after 10 s idle, every 5 s, give up after 3), so a connection
/// to a host that died without closing it fails within about 25 s instead of never.
fn set_keepalive(s: &TcpStream) {
    let fd = s.as_raw_fd();
    let set = |level: libc::c_int, name: libc::c_int, value: libc::c_int| {
        // SAFETY: passes a pointer to a live c_int and its size.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 10);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 5);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3);
}

/// "rank 3", "ranks 1, 2, 5", or the first 16 and a count.
fn describe_ranks(ranks: &[usize]) -> String {
    const SHOWN: usize = 16;
    let list: Vec<String> = ranks.iter().take(SHOWN).map(usize::to_string).collect();
    match ranks.len() {
        1 => format!("rank {}", list[0]),
        n if n <= SHOWN => format!("ranks {}", list.join(", ")),
        n => format!("ranks {}, ... ({n} in all)", list.join(", ")),
    }
}
