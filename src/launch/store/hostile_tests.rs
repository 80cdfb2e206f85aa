//! The store under idle and hostile peers, over real sockets on 127.0.0.1: idle connections by
//! the thousand, garbage, wrong tokens and impostors must not keep the job's ranks out, and
//! rank 0 must say whom it refused and why.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use super::proto::{self, Dec, Enc};
use super::server::accept::{HELLO_LIMIT, MAX_PENDING};
use super::*;
use crate::launch::peers;

const TOKEN: &[u8] = b"\x01\x23\x45\x67\x89\xab\xcd\xef";
const IDLE: usize = 1000;

/// Raises the soft limit on open files to the hard limit; false (after saying SKIPPED) when
/// even that leaves fewer than `need`.
pub(crate) fn enough_descriptors(need: u64, test: &str) -> bool {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is a live rlimit for the kernel to fill and read back.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        }
    }
    let missing = (lim.rlim_cur < need).then(|| {
        format!(
            "{test} needs {need} open files, the hard limit (ulimit -Hn) is {}",
            lim.rlim_cur
        )
    });
    crate::test_skip::can_use("nofile", missing)
}

/// Reads until the server closes the connection; returns what it sent first (an error reply
/// or nothing). Panics if the connection is still open after `limit`.
fn answer_then_close(mut s: TcpStream, limit: Duration) -> Vec<u8> {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("the store left a refused connection open: {e}"),
        }
    }
}

/// The message of an error reply frame.
fn error_message(frame: &[u8]) -> String {
    let mut d = Dec::new(&frame[4..]);
    assert_eq!(d.u8().unwrap(), proto::ERR, "{frame:?}");
    let _kind = d.u8().unwrap();
    String::from_utf8(d.bytes16(proto::MAX_MESSAGE).unwrap().to_vec()).unwrap()
}

fn hello(rank: u32, token: &[u8]) -> Vec<u8> {
    Enc::with_bytes(proto::MAGIC)
        .u32(rank)
        .bytes16(token)
        .finish()
}

/// Opens up to `n` connections that never say a word (fewer if the kernel's backlog turns
/// some away while the store is busy closing the others).
fn idle_connections(addr: &str, n: usize) -> Vec<TcpStream> {
    let sa: std::net::SocketAddr = addr.parse().unwrap();
    (0..n)
        .filter_map(|_| TcpStream::connect_timeout(&sa, Duration::from_secs(5)).ok())
        .collect()
}

#[test]
fn a_thousand_idle_connections_and_garbage_do_not_keep_the_ranks_out() {
    if !enough_descriptors(IDLE as u64 + 200, "a_thousand_idle_connections...") {
        return;
    }
    // The store's own timeout is far longer than the ranks': a rank must get in long before
    // the idle crowd's connections would time out, however long that is.
    let timeout = Duration::from_secs(20);
    let server = StoreServer::bind("127.0.0.1:0", TOKEN, 2, 3 * timeout).unwrap();
    let addr = server.local_addr().to_string();
    let idle = idle_connections(&addr, IDLE);
    assert!(idle.len() > IDLE / 2, "only {} connected", idle.len());
    let mut garbage = Vec::new();
    for bytes in [
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        Enc::with_bytes(b"NOTSTORE").u32(1).bytes16(TOKEN).finish(),
        (u32::MAX).to_le_bytes().to_vec(),
        hello(1, b"another job's token"),
    ] {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.write_all(&bytes).unwrap();
        garbage.push(s);
    }
    // The job's ranks join and work, with the idle crowd still connected.
    let started = Instant::now();
    let a = addr.clone();
    let rank1 = thread::spawn(move || {
        let mut c = StoreClient::connect(&a, TOKEN, 1, timeout).unwrap();
        c.all_gather("after-the-crowd", b"1").unwrap()
    });
    let mut c0 = StoreClient::connect(&addr, TOKEN, 0, timeout).unwrap();
    let got = c0.all_gather("after-the-crowd", b"0").unwrap();
    assert_eq!(got, vec![b"0".to_vec(), b"1".to_vec()]);
    assert_eq!(rank1.join().unwrap(), got);
    let bound = timeout + Duration::from_secs(30);
    assert!(started.elapsed() < bound, "{:?}", started.elapsed());
    // Every garbage client is answered and closed.
    for (i, s) in garbage.into_iter().enumerate() {
        let answer = answer_then_close(s, bound);
        assert!(!answer.is_empty(), "garbage client {i} got no answer");
        let msg = error_message(&answer);
        let want = if i == 3 {
            "wrong token"
        } else {
            "not understood"
        };
        assert!(msg.contains(want), "client {i}: {msg}");
    }
    // Rank 0 logged whom it refused and why, and at most MAX_LOGGED lines of it.
    let lines = server.refusal_lines();
    assert_eq!(lines.len(), peers::MAX_LOGGED, "{lines:#?}");
    assert!(lines.iter().all(|l| l.contains("refused 127.0.0.1:")));
    assert!(lines.iter().any(|l| l.contains(&format!(
        "no complete hello yet when {MAX_PENDING} connections were waiting"
    ))));
    drop(idle);
}

#[test]
fn refused_peers_are_logged_and_named_when_their_rank_never_comes() {
    let timeout = Duration::from_millis(1500);
    let server = StoreServer::bind("127.0.0.1:0", TOKEN, 2, timeout).unwrap();
    let addr = server.local_addr().to_string();
    let silent = TcpStream::connect(&addr).unwrap();
    let mut http = TcpStream::connect(&addr).unwrap();
    http.write_all(b"GET /\x00\x1b[31m HTTP/1.1\r\n\r\n")
        .unwrap();
    let err = StoreClient::connect(&addr, b"another job", 1, timeout)
        .err()
        .expect("a wrong token is refused");
    assert!(err.to_string().contains("wrong token"), "{err}");
    // Rank 0 waits for rank 1 in vain, and says why it never came.
    let mut c0 = StoreClient::connect(&addr, TOKEN, 0, timeout).unwrap();
    let msg = c0.barrier("start").unwrap_err().to_string();
    assert!(
        msg.contains("rank 1 never connected (a peer claiming rank 1 (127.0.0.1:")
            && msg.contains("was refused: wrong token)"),
        "{msg}"
    );
    // The silent peer is closed after the hello deadline, without an answer.
    let started = Instant::now();
    let bound = timeout + Duration::from_secs(30);
    assert!(answer_then_close(silent, bound).is_empty());
    assert!(started.elapsed() < bound);
    let answer = answer_then_close(http, bound);
    assert!(error_message(&answer).contains("not understood"));
    let lines = server.refusal_lines();
    let has = |what: &str| lines.iter().any(|l| l.contains(what));
    assert!(has("wrong token (claimed rank 1)"), "{lines:#?}");
    assert!(has("no complete hello within 1s 500ms"), "{lines:#?}");
    // The garbage is shown escaped, cut short: no raw control bytes reach the log.
    assert!(
        has(r#"it starts with "GET /\x00\x1b[31m HTTP...""#),
        "{lines:#?}"
    );
    assert!(lines
        .iter()
        .all(|l| !l.contains('\x1b') && !l.contains('\0')));
    assert!(HELLO_LIMIT >= Duration::from_secs(5));
}
