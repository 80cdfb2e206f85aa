//! The store's wire format and deadline-bounded socket I/O.
//!
//! Every message is a frame: a little-endian u32 payload length, then the payload. Lengths are
//! checked against the largest legal message before anything is allocated.
//!
//! ```text
//! hello    client → server  "CBSTORE1" rank:u32 token:bytes16
//! welcome  server → client  OK world:u32            | ERR kind:u8 message:bytes16
//! request  client → server  SET key:bytes16 value:bytes32
//!                           GET wait_ms:u64 key:bytes16
//!                           GATHER wait_ms:u64 name:bytes16 value:bytes32
//!                           BARRIER wait_ms:u64 name:bytes16
//!                           BYE
//! reply    server → client  OK [value:bytes32 | count:u32 value:bytes32 × count] | ERR kind message
//! ```
//! `bytes16`/`bytes32` are a u16/u32 length and that many bytes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::{MAX_KEY, MAX_TOKEN, MAX_VALUE};

pub(super) const MAGIC: &[u8; 8] = b"CBSTORE1";

pub(super) const SET: u8 = 1;
pub(super) const GET: u8 = 2;
pub(super) const GATHER: u8 = 3;
pub(super) const BARRIER: u8 = 4;
pub(super) const BYE: u8 = 5;

pub(super) const OK: u8 = 0;
pub(super) const ERR: u8 = 1;
/// Error kinds: the user can fix it (token, rank, sizes) or the run failed (timeout, lost rank).
pub(super) const ERR_USAGE: u8 = 0;
pub(super) const ERR_RUN: u8 = 1;

/// The longest hello payload.
pub(super) const MAX_HELLO: usize = MAGIC.len() + 4 + 2 + MAX_TOKEN;
/// The longest request payload (a GATHER with the longest name and value).
pub(super) const MAX_REQUEST: usize = 1 + 8 + 2 + MAX_KEY + 4 + MAX_VALUE;
/// The longest error message carried.
pub(super) const MAX_MESSAGE: usize = 4096;
/// The longest welcome or error reply.
pub(super) const MAX_SMALL_REPLY: usize = 2 + 2 + MAX_MESSAGE + 4;
/// How long a wait may be at most (a guard against `Instant` overflow, not a policy).
pub(super) const MAX_WAIT: Duration = Duration::from_secs(30 * 24 * 3600);

/// `now + d`, saturating at [`MAX_WAIT`].
pub(super) fn deadline_after(d: Duration) -> Instant {
    Instant::now() + d.min(MAX_WAIT)
}

/// Why a frame could not be read.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The peer closed the connection between frames.
    Closed,
    /// The frame announced more bytes than allowed; nothing was allocated for it.
    TooLarge(u32),
    Io(io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Closed => write!(f, "the connection was closed"),
            ReadError::TooLarge(n) => write!(f, "a message of {n} bytes is over the limit"),
            ReadError::Io(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                write!(f, "the connection was closed in the middle of a message")
            }
            ReadError::Io(e) if is_timeout(e) => write!(f, "timed out"),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

pub(super) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

/// Reads one frame of at most `max` payload bytes. Its first byte must arrive by `start_by`
/// (`None`: wait as long as it takes, as the server does between requests); the rest must
/// follow within `finish_within`.
pub(super) fn read_frame(
    s: &mut TcpStream,
    max: usize,
    start_by: Option<Instant>,
    finish_within: Duration,
) -> Result<Vec<u8>, ReadError> {
    let mut head = [0u8; 4];
    match read_exact_by(s, &mut head[..1], start_by) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(ReadError::Closed),
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Err(ReadError::Closed),
        Err(e) => return Err(ReadError::Io(e)),
    }
    let deadline = Some(deadline_after(finish_within));
    read_exact_by(s, &mut head[1..], deadline).map_err(ReadError::Io)?;
    let len = u32::from_le_bytes(head);
    if len as usize > max {
        return Err(ReadError::TooLarge(len));
    }
    let mut payload = vec![0u8; len as usize];
    read_exact_by(s, &mut payload, deadline).map_err(ReadError::Io)?;
    Ok(payload)
}

/// Fills `buf` unless `deadline` passes first (`None`: no deadline).
fn read_exact_by(s: &mut TcpStream, buf: &mut [u8], deadline: Option<Instant>) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let wait = match deadline {
            None => None,
            Some(d) => Some(left(d)?),
        };
        s.set_read_timeout(wait)?;
        match s.read(&mut buf[done..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes all of `buf` unless `deadline` passes first.
pub(super) fn write_all_by(s: &mut TcpStream, buf: &[u8], deadline: Instant) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        s.set_write_timeout(Some(left(deadline)?))?;
        match s.write(&buf[done..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The time left before `deadline`, or a timeout error.
fn left(deadline: Instant) -> io::Result<Duration> {
    let d = deadline.saturating_duration_since(Instant::now());
    if d.is_zero() {
        Err(io::ErrorKind::TimedOut.into())
    } else {
        Ok(d)
    }
}

/// Builds one frame.
pub(super) struct Enc(Vec<u8>);

impl Enc {
    pub fn new(first: u8) -> Enc {
        Enc(vec![0, 0, 0, 0, first])
    }

    /// A frame that starts with raw bytes (the hello's magic).
    pub fn with_bytes(first: &[u8]) -> Enc {
        let mut v = vec![0, 0, 0, 0];
        v.extend_from_slice(first);
        Enc(v)
    }

    pub fn u8(mut self, x: u8) -> Enc {
        self.0.push(x);
        self
    }

    pub fn u32(mut self, x: u32) -> Enc {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }

    pub fn u64(mut self, x: u64) -> Enc {
        self.0.extend_from_slice(&x.to_le_bytes());
        self
    }

    /// Callers keep `b` under 64 KiB (keys, tokens and messages are bounded far below).
    pub fn bytes16(mut self, b: &[u8]) -> Enc {
        let n = b.len().min(u16::MAX as usize);
        self.0.extend_from_slice(&(n as u16).to_le_bytes());
        self.0.extend_from_slice(&b[..n]);
        self
    }

    pub fn bytes32(mut self, b: &[u8]) -> Enc {
        self.0.extend_from_slice(&(b.len() as u32).to_le_bytes());
        self.0.extend_from_slice(b);
        self
    }

    /// The frame with its length filled in.
    pub fn finish(mut self) -> Vec<u8> {
        let n = (self.0.len() - 4) as u32;
        self.0[..4].copy_from_slice(&n.to_le_bytes());
        self.0
    }
}

/// Reads the fields of one payload; any shortfall or excess is a malformed message.
pub(super) struct Dec<'a> {
    buf: &'a [u8],
}

fn malformed() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "malformed store message")
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8]) -> Dec<'a> {
        Dec { buf }
    }

    pub fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if n > self.buf.len() {
            return Err(malformed());
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    pub fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    pub fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub fn bytes16(&mut self, max: usize) -> io::Result<&'a [u8]> {
        let n = u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")) as usize;
        if n > max {
            return Err(malformed());
        }
        self.take(n)
    }

    pub fn bytes32(&mut self, max: usize) -> io::Result<&'a [u8]> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(malformed());
        }
        self.take(n)
    }

    /// A key or name: 1 to [`MAX_KEY`] bytes of UTF-8.
    pub fn key(&mut self) -> io::Result<String> {
        let b = self.bytes16(MAX_KEY)?;
        match std::str::from_utf8(b) {
            Ok(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(malformed()),
        }
    }

    pub fn end(&self) -> io::Result<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(malformed())
        }
    }
}

/// An error reply.
pub(super) fn err_frame(kind: u8, msg: &str) -> Vec<u8> {
    let mut end = msg.len().min(MAX_MESSAGE);
    while !msg.is_char_boundary(end) {
        end -= 1;
    }
    Enc::new(ERR)
        .u8(kind)
        .bytes16(&msg.as_bytes()[..end])
        .finish()
}
