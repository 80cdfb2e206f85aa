//! Refusals and failures over real loopback sockets: wrong tokens and stray connections, peers
//! that vanish, stay silent or never come, and the launcher's abort flag.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::thread;

use super::hello::{Hello, HELLO_LEN};
use super::tests::{listeners, mesh, on_ranks, TIMEOUT, TOKEN};

/// Added to an operation's own timeout to bound a test's wait: it catches a hang, never
/// measures speed.
const HANG: Duration = Duration::from_secs(30);
use super::*;
use crate::backend::host::transport::Combine;

/// Reads from a connection the mesh should close; true when it was closed, not left hanging.
fn closed_without_answer(mut s: TcpStream) -> bool {
    // Only catches a connection left hanging: the mesh closes these as soon as it reads them.
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut b = [0u8; HELLO_LEN];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() == ErrorKind::ConnectionReset,
    }
}

#[test]
fn wrong_tokens_and_strays_are_refused_and_good_peers_still_connect() {
    let (mut ls, addrs) = listeners(2);
    let l1 = ls.pop().unwrap();
    let l0 = ls.pop().unwrap();
    let addrs = &addrs;
    let mut ts = thread::scope(|s| {
        let r0 = s.spawn(move || TcpTransport::connect(0, 2, l0, addrs, TOKEN, TIMEOUT));
        // A connection that never says a word, held open while the mesh forms.
        let _silent = TcpStream::connect(addrs[0]).unwrap();
        let mut junk = TcpStream::connect(addrs[0]).unwrap();
        junk.write_all(&[0xAB; HELLO_LEN]).unwrap();
        let mut out_of_range = TcpStream::connect(addrs[0]).unwrap();
        let hello = Hello {
            token: TOKEN,
            rank: 7,
            nranks: 2,
        };
        out_of_range.write_all(&hello.encode()).unwrap();
        assert!(
            closed_without_answer(junk),
            "a malformed hello was answered"
        );
        assert!(
            closed_without_answer(out_of_range),
            "rank 7 of 2 was answered"
        );
        // Another job's rank 1 dials rank 0: refused, and it says which rank refused it.
        let (mut lr, ar) = listeners(1);
        let peers = [addrs[0], ar[0]];
        let err = TcpTransport::connect(1, 2, lr.pop().unwrap(), &peers, TOKEN ^ 1, TIMEOUT)
            .err()
            .expect("a wrong token must be refused")
            .to_string();
        assert!(
            err.contains("rank 0") && err.contains(&addrs[0].to_string()),
            "{err}"
        );
        // The real rank 1 still gets in.
        let t1 = TcpTransport::connect(1, 2, l1, addrs, TOKEN, TIMEOUT).unwrap();
        vec![r0.join().unwrap().unwrap(), t1]
    });
    let sums = on_ranks(&mut ts, |t| {
        let mine = [t.rank() as i32 + 1];
        let mut got = [0i32];
        let peer = 1 - t.rank();
        t.send_recv(
            Some((peer, bytemuck::cast_slice(&mine))),
            Some((peer, bytemuck::cast_slice_mut(&mut got), Combine::Copy)),
        )
        .unwrap();
        got[0] + mine[0]
    });
    assert_eq!(sums, vec![3, 3]);
}

#[test]
fn a_peer_that_drops_mid_exchange_is_named() {
    let mut ts = mesh(2, TIMEOUT);
    let t1 = ts.pop().unwrap();
    let mut t0 = ts.pop().unwrap();
    let addr1 = t0.peer_addr(1).unwrap().to_string();
    let len = 32 << 20;
    thread::scope(|s| {
        s.spawn(move || {
            let mut t1 = t1;
            let mut part = vec![0u8; 1 << 20];
            t1.recv(0, &mut part, Combine::Copy).unwrap();
            drop(t1);
        });
        let data = vec![1u8; len];
        let mut into = vec![0u8; len];
        let start = Instant::now();
        let err = t0
            .send_recv(Some((1, &data)), Some((1, &mut into, Combine::Copy)))
            .unwrap_err()
            .to_string();
        // Ended by the drop, not by the stall timeout; the bound only catches a hang.
        assert!(
            start.elapsed() < TIMEOUT + HANG,
            "took {:?}",
            start.elapsed()
        );
        assert!(err.contains("rank 1") && err.contains(&addr1), "{err}");
        assert!(!err.contains("timed out"), "{err}");
    });
}

#[test]
fn a_silent_peer_times_out_naming_it() {
    let mut ts = mesh(3, TIMEOUT);
    ts[0].set_timeout(Duration::from_millis(300));
    ts[0].mark_progress();
    assert_eq!(ts[0].progress().load(Ordering::Relaxed), 1);
    let addr2 = ts[0].peer_addr(2).unwrap().to_string();
    let start = Instant::now();
    let err = ts[0]
        .recv(2, &mut [0u8; 64], Combine::Copy)
        .unwrap_err()
        .to_string();
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(300) + HANG,
        "{took:?}"
    );
    assert!(
        err.contains("timed out") && err.contains("rank 2") && err.contains(&addr2),
        "{err}"
    );
    // A send that the silent peer never drains stalls too, once the buffers are full: more
    // than the kernel can hold on both ends, however it is tuned.
    let big = vec![0u8; unbufferable_bytes()];
    let err = ts[0].send(1, &big).unwrap_err().to_string();
    assert!(
        err.contains("timed out") && err.contains("rank 1") && err.contains("sent"),
        "{err}"
    );
}

#[test]
fn the_abort_flag_stops_a_wait() {
    let flag = Arc::new(AtomicBool::new(false));
    let mut ts = mesh(2, Duration::from_secs(30));
    let mut t0 = ts.remove(0).with_abort(flag.clone());
    let setter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let start = Instant::now();
    let err = t0.recv(1, &mut [0u8; 8], Combine::Copy).unwrap_err();
    // Ended by the flag (the message says so), not by the 30 s stall timeout.
    assert!(start.elapsed() < Duration::from_secs(30) + HANG);
    assert!(err.to_string().contains("aborted"), "{err}");
    setter.join().unwrap();
}

#[test]
fn connect_gives_up_naming_the_missing_rank() {
    let short = Duration::from_millis(300);
    // Rank 0's listener exists but nobody accepts: rank 1 gets no answer.
    let (mut ls, addrs) = listeners(2);
    let l1 = ls.pop().unwrap();
    let err = TcpTransport::connect(1, 2, l1, &addrs, TOKEN, short)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("rank 0") && err.contains("no handshake answer"),
        "{err}"
    );
    // Rank 0 waits for a rank 1 that never comes.
    let (mut ls, addrs) = listeners(2);
    let l0 = ls.remove(0);
    let err = TcpTransport::connect(0, 2, l0, &addrs, TOKEN, short)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("timed out") && err.contains("[1]"), "{err}");
    // A mesh that does not fit its addresses is a usage error.
    let (mut ls, addrs) = listeners(1);
    let err = TcpTransport::connect(0, 2, ls.remove(0), &addrs, TOKEN, short);
    assert!(matches!(err, Err(Error::Usage(_))));
}

/// More bytes than a loopback connection can hold in flight: four times the largest socket
/// buffers this kernel allows (send plus receive), at least 64 MiB, at most 1 GiB.
fn unbufferable_bytes() -> usize {
    let max_of = |path: &str| -> usize {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.split_whitespace().last()?.parse().ok())
            .unwrap_or(0)
    };
    let send = max_of("/proc/sys/net/ipv4/tcp_wmem").max(max_of("/proc/sys/net/core/wmem_max"));
    let recv = max_of("/proc/sys/net/ipv4/tcp_rmem").max(max_of("/proc/sys/net/core/rmem_max"));
    (4 * (send + recv)).clamp(64 << 20, 1 << 30)
}
