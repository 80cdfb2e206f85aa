//! A rank's side of the store: one connection, one request at a time.

use std::io;
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::thread;
use std::time::{Duration, Instant};

use super::proto::{self, Dec, Enc, ReadError};
use super::{set_keepalive, MAX_KEY, MAX_TOKEN, MAX_VALUE};
use crate::error::{Error, Result};

/// How much longer than the server's wait a client waits for its reply.
const REPLY_SLACK: Duration = Duration::from_secs(1);
/// The longest pause between connection attempts.
const MAX_BACKOFF: Duration = Duration::from_millis(250);

/// A connection to the rendezvous store on rank 0.
pub struct StoreClient {
    stream: TcpStream,
    addr: String,
    rank: usize,
    world: usize,
    timeout: Duration,
    /// Set when the connection can no longer be trusted to be in step with the server.
    broken: Option<String>,
    closed: bool,
}

/// Why one connection attempt failed.
enum Attempt {
    /// Try again (nobody listening yet, name not resolvable yet, reset).
    Retry(String),
    /// The server answered and said no, or the address is malformed: final.
    Fatal(Error),
}

impl StoreClient {
    /// Connects to the store at `addr` (`host:port` or `[v6]:port`) as `rank`, retrying until
    /// `timeout` has passed (rank 0 may start its store later than others start looking).
    /// `timeout` then bounds every operation. A server that refuses the token or the rank is an
    /// [`Error::Usage`]; not reaching it in time is an [`Error::Rank`].
    pub fn connect(
        addr: &str,
        token: &[u8],
        rank: usize,
        timeout: Duration,
    ) -> Result<StoreClient> {
        if token.len() > MAX_TOKEN {
            return Err(Error::usage(format!(
                "a store token is at most {MAX_TOKEN} bytes"
            )));
        }
        if rank > u32::MAX as usize {
            return Err(Error::usage(format!(
                "rank {rank} is out of range for the store"
            )));
        }
        let deadline = proto::deadline_after(timeout);
        let mut backoff = Duration::from_millis(5);
        loop {
            // The reason of the last attempt that was made: the one to report once time is up.
            let why = match attempt(addr, token, rank, timeout, deadline) {
                Ok(c) => return Ok(c),
                Err(Attempt::Fatal(e)) => return Err(e),
                Err(Attempt::Retry(why)) => why,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            thread::sleep(backoff.min(left));
            if Instant::now() >= deadline {
                return Err(Error::Rank(format!(
                    "rank {rank} could not reach the rendezvous store at {addr} within {}: {why}; \
                     check that rank 0 is running and that {addr} is reachable from this host \
                     (COLLBENCH_STORE_ADDR sets it)",
                    humantime::format_duration(timeout)
                )));
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks, as the server knows it.
    pub fn world(&self) -> usize {
        self.world
    }

    /// The bound on each operation.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout.max(Duration::from_millis(1));
    }

    /// Stores `value` under `key` (1 to 256 bytes), replacing any earlier value.
    pub fn set(&mut self, key: &str, value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(key, value)?;
        let req = Enc::new(proto::SET)
            .bytes16(key.as_bytes())
            .bytes32(value)
            .finish();
        let reply = self.call(&req, None, proto::MAX_SMALL_REPLY, &format!("set '{key}'"))?;
        Dec::new(&reply).end().map_err(|_| self.garbled())
    }

    /// The value of `key`, waiting (up to the timeout) until some rank sets it.
    pub fn get(&mut self, key: &str) -> Result<Vec<u8>> {
        check_key(key)?;
        let req = Enc::new(proto::GET)
            .u64(self.wait_ms())
            .bytes16(key.as_bytes())
            .finish();
        let max = 4 + MAX_VALUE;
        let reply = self.call(&req, Some(self.timeout), max, &format!("get '{key}'"))?;
        let mut d = Dec::new(&reply);
        let value = d.bytes32(MAX_VALUE).map_err(|_| self.garbled())?.to_vec();
        d.end().map_err(|_| self.garbled())?;
        Ok(value)
    }

    /// Waits until every rank has called `barrier(name)` (the k-th call of each rank meets
    /// the k-th call of the others).
    pub fn barrier(&mut self, name: &str) -> Result<()> {
        check_key(name)?;
        let req = Enc::new(proto::BARRIER)
            .u64(self.wait_ms())
            .bytes16(name.as_bytes())
            .finish();
        let reply = self.call(
            &req,
            Some(self.timeout),
            proto::MAX_SMALL_REPLY,
            &format!("barrier '{name}'"),
        )?;
        Dec::new(&reply).end().map_err(|_| self.garbled())
    }

    /// Every rank's `value` for `name`, in rank order, once all have given theirs.
    pub fn all_gather(&mut self, name: &str, value: &[u8]) -> Result<Vec<Vec<u8>>> {
        check_key(name)?;
        check_value(name, value)?;
        let req = Enc::new(proto::GATHER)
            .u64(self.wait_ms())
            .bytes16(name.as_bytes())
            .bytes32(value)
            .finish();
        let max = 4 + self.world.saturating_mul(4 + MAX_VALUE);
        let reply = self.call(
            &req,
            Some(self.timeout),
            max,
            &format!("all_gather '{name}'"),
        )?;
        let mut d = Dec::new(&reply);
        let count = d.u32().map_err(|_| self.garbled())? as usize;
        if count != self.world {
            return Err(self.garbled());
        }
        let values = (0..count)
            .map(|_| d.bytes32(MAX_VALUE).map(<[u8]>::to_vec))
            .collect::<io::Result<Vec<_>>>()
            .map_err(|_| self.garbled())?;
        d.end().map_err(|_| self.garbled())?;
        Ok(values)
    }

    /// Says goodbye: others waiting for this rank then fail at once, naming it, instead of
    /// waiting for their timeout. Dropping the client does the same.
    pub fn close(mut self) -> Result<()> {
        self.goodbye()
    }

    fn goodbye(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if self.broken.is_some() {
            return Ok(());
        }
        let bye = Enc::new(proto::BYE).finish();
        let deadline = proto::deadline_after(self.timeout.min(Duration::from_secs(1)));
        let sent = proto::write_all_by(&mut self.stream, &bye, deadline);
        let _ = self.stream.shutdown(Shutdown::Write);
        sent.map_err(|e| {
            Error::Rank(format!(
                "rank {} could not say goodbye to the store: {e}",
                self.rank
            ))
        })
    }

    /// Vanishes without a goodbye, as a crashed rank would.
    #[cfg(test)]
    pub(super) fn vanish(mut self) {
        self.closed = true;
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    fn wait_ms(&self) -> u64 {
        self.timeout.as_millis().min(u64::MAX as u128) as u64
    }

    fn garbled(&self) -> Error {
        Error::Rank(format!(
            "rank {} got a malformed reply from the store at {}",
            self.rank, self.addr
        ))
    }

    /// Sends one request and returns the payload of its OK reply. The server answers within
    /// `wait` (or at once); the reply must then arrive within [`REPLY_SLACK`] more.
    fn call(
        &mut self,
        req: &[u8],
        wait: Option<Duration>,
        max: usize,
        what: &str,
    ) -> Result<Vec<u8>> {
        let (rank, addr) = (self.rank, &self.addr);
        if let Some(why) = &self.broken {
            return Err(Error::Rank(format!(
                "rank {rank} cannot {what}: its connection to the store at {addr} broke earlier ({why})"
            )));
        }
        let frame = match self.exchange(req, wait, max) {
            Ok(f) => f,
            Err(why) => {
                let e = Error::Rank(format!(
                    "rank {rank} could not {what} on the store at {}: {why}",
                    self.addr
                ));
                self.broken = Some(why);
                return Err(e);
            }
        };
        let mut d = Dec::new(&frame);
        match d.u8() {
            Ok(proto::OK) => Ok(frame[1..].to_vec()),
            Ok(proto::ERR) => {
                let kind = d.u8().unwrap_or(proto::ERR_RUN);
                let msg = d
                    .bytes16(proto::MAX_MESSAGE)
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default();
                Err(match kind {
                    proto::ERR_USAGE => {
                        Error::usage(format!("the store refused {what} from rank {rank}: {msg}"))
                    }
                    _ => Error::Rank(format!("{msg} (rank {rank}, {what})")),
                })
            }
            _ => {
                self.broken = Some("malformed reply".into());
                Err(self.garbled())
            }
        }
    }

    /// Writes `req` and reads one reply frame, within the time bounds of [`Self::call`].
    fn exchange(
        &mut self,
        req: &[u8],
        wait: Option<Duration>,
        max: usize,
    ) -> std::result::Result<Vec<u8>, String> {
        let send_by = proto::deadline_after(self.timeout);
        proto::write_all_by(&mut self.stream, req, send_by)
            .map_err(|e| format!("sending failed: {e}"))?;
        let reply_in = wait.unwrap_or(Duration::ZERO) + self.timeout.min(REPLY_SLACK);
        let reply_by = proto::deadline_after(reply_in);
        match proto::read_frame(&mut self.stream, max + 1, Some(reply_by), self.timeout) {
            Ok(f) => Ok(f),
            Err(ReadError::Closed) => {
                Err("the store closed the connection (did rank 0 exit?)".into())
            }
            Err(ReadError::Io(e)) if proto::is_timeout(&e) => Err(format!(
                "no reply within {}",
                humantime::format_duration(reply_in)
            )),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl Drop for StoreClient {
    fn drop(&mut self) {
        let _ = self.goodbye();
    }
}

fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY {
        return Err(Error::usage(format!(
            "store key '{key}' has {} bytes; keys have 1 to {MAX_KEY}",
            key.len()
        )));
    }
    Ok(())
}

fn check_value(key: &str, value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE {
        return Err(Error::usage(format!(
            "the value for store key '{key}' has {} bytes, over the store's limit of {MAX_VALUE} \
             bytes (1 MiB)",
            value.len()
        )));
    }
    Ok(())
}

/// One attempt: resolve, connect, hello.
fn attempt(
    addr: &str,
    token: &[u8],
    rank: usize,
    timeout: Duration,
    deadline: Instant,
) -> std::result::Result<StoreClient, Attempt> {
    let addrs = addr.to_socket_addrs().map_err(|e| match e.kind() {
        io::ErrorKind::InvalidInput => Attempt::Fatal(Error::usage(format!(
            "store address '{addr}' is not host:port ({e}); COLLBENCH_STORE_ADDR sets it"
        ))),
        _ => Attempt::Retry(format!("cannot resolve {addr}: {e}")),
    })?;
    let mut why = format!("{addr} resolves to no address");
    let mut stream = None;
    for sa in addrs {
        // The first address is always tried, even with no time left: a retry's reason must
        // come from a real attempt.
        let left = deadline.saturating_duration_since(Instant::now());
        let wait = left.clamp(Duration::from_millis(100), Duration::from_secs(2));
        match TcpStream::connect_timeout(&sa, wait) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => why = format!("connecting to {sa}: {e}"),
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    let mut stream = stream.ok_or(Attempt::Retry(why))?;
    let _ = stream.set_nodelay(true);
    set_keepalive(&stream);
    let hello = Enc::with_bytes(proto::MAGIC)
        .u32(rank as u32)
        .bytes16(token)
        .finish();
    let hello_by = proto::deadline_after(timeout.min(Duration::from_secs(10)));
    let retry = |e: String| Attempt::Retry(format!("hello to {addr}: {e}"));
    proto::write_all_by(&mut stream, &hello, hello_by).map_err(|e| retry(e.to_string()))?;
    let reply = proto::read_frame(&mut stream, proto::MAX_SMALL_REPLY, Some(hello_by), timeout)
        .map_err(|e| retry(e.to_string()))?;
    let mut d = Dec::new(&reply);
    let garbled = || {
        Attempt::Fatal(Error::Rank(format!(
            "{addr} did not answer like a collbench store"
        )))
    };
    match d.u8().map_err(|_| garbled())? {
        proto::OK => {
            let world = d.u32().map_err(|_| garbled())? as usize;
            Ok(StoreClient {
                stream,
                addr: addr.to_string(),
                rank,
                world,
                timeout: timeout.max(Duration::from_millis(1)),
                broken: None,
                closed: false,
            })
        }
        proto::ERR => {
            let _ = d.u8();
            let msg = d
                .bytes16(proto::MAX_MESSAGE)
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            Err(Attempt::Fatal(Error::usage(format!(
                "the rendezvous store at {addr} refused rank {rank}: {msg}"
            ))))
        }
        _ => Err(garbled()),
    }
}
