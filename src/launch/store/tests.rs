//! Real sockets on 127.0.0.1 and real threads.

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use super::proto::{self, Dec, Enc};
use super::*;

const TOKEN: &[u8] = b"\x01\x23\x45\x67\x89\xab\xcd\xef";
const LONG: Duration = Duration::from_secs(10);
/// Added to an operation's own timeout to bound a test's wait: it catches a hang, never
/// measures speed.
const HANG: Duration = Duration::from_secs(30);

fn server(world: usize) -> (StoreServer, String) {
    let s = StoreServer::bind("127.0.0.1:0", TOKEN, world, LONG).unwrap();
    let addr = s.local_addr().to_string();
    (s, addr)
}

fn client(addr: &str, rank: usize, timeout: Duration) -> StoreClient {
    StoreClient::connect(addr, TOKEN, rank, timeout).unwrap_or_else(|e| panic!("rank {rank}: {e}"))
}

/// Runs `f(rank)` on one thread per rank and returns the results in rank order.
fn on_ranks<T: Send + 'static>(
    world: usize,
    f: impl Fn(usize) -> T + Send + Clone + 'static,
) -> Vec<T> {
    let threads: Vec<_> = (0..world)
        .map(|r| {
            let f = f.clone();
            thread::spawn(move || f(r))
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn four_ranks_all_gather_barrier_and_share_keys() {
    let (_server, addr) = server(4);
    let results = on_ranks(4, move |r| {
        let mut c = StoreClient::connect(&addr, TOKEN, r, LONG).unwrap();
        assert_eq!((c.rank(), c.world()), (r, 4));
        c.set(&format!("host/{r}"), format!("node{r}").as_bytes())
            .unwrap();
        let first = c
            .all_gather("listeners", format!("10.0.0.{r}:{}", 4000 + r).as_bytes())
            .unwrap();
        c.barrier("ready").unwrap();
        c.barrier("ready").unwrap(); // a name may be used again: the k-th calls meet
        let second = c.all_gather("listeners", &[r as u8; 3]).unwrap();
        let empty = c.all_gather("empty", b"").unwrap();
        let peer = c.get(&format!("host/{}", (r + 1) % 4)).unwrap();
        c.close().unwrap();
        (first, second, empty, peer)
    });
    for (r, (first, second, empty, peer)) in results.into_iter().enumerate() {
        let want: Vec<Vec<u8>> = (0..4)
            .map(|i| format!("10.0.0.{i}:{}", 4000 + i).into_bytes())
            .collect();
        assert_eq!(first, want, "rank {r}");
        assert_eq!(
            second,
            (0..4u8).map(|i| vec![i; 3]).collect::<Vec<_>>(),
            "rank {r}"
        );
        assert_eq!(empty, vec![Vec::<u8>::new(); 4]);
        assert_eq!(peer, format!("node{}", (r + 1) % 4).into_bytes());
    }
}

#[test]
fn clients_may_start_before_the_server() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let a = addr.clone();
    let clients = thread::spawn(move || {
        on_ranks(2, move |r| {
            let mut c = StoreClient::connect(&a, TOKEN, r, LONG).unwrap();
            c.all_gather("hello", &[r as u8]).unwrap()
        })
    });
    thread::sleep(Duration::from_millis(200));
    let _server = StoreServer::bind(&addr, TOKEN, 2, LONG).unwrap();
    for got in clients.join().unwrap() {
        assert_eq!(got, vec![vec![0], vec![1]]);
    }
}

#[test]
fn wrong_token_is_refused_and_others_are_unaffected() {
    let (_server, addr) = server(2);
    let err = StoreClient::connect(&addr, b"not the token", 0, LONG)
        .err()
        .expect("refused");
    assert!(matches!(err, Error::Usage(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("wrong token") && msg.contains("COLLBENCH_TOKEN"),
        "{msg}"
    );
    // Rank 0 is still free for the right client; the job goes on.
    let got = on_ranks(2, move |r| {
        client(&addr, r, LONG).all_gather("x", &[r as u8]).unwrap()
    });
    assert_eq!(got[1], vec![vec![0], vec![1]]);
}

#[test]
fn out_of_range_and_duplicate_ranks_are_refused() {
    let (_server, addr) = server(2);
    let err = StoreClient::connect(&addr, TOKEN, 2, LONG)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("rank 2 is out of range") && err.contains("2 ranks"),
        "{err}"
    );
    let _first = client(&addr, 1, LONG);
    let err = StoreClient::connect(&addr, TOKEN, 1, LONG)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("rank 1 is already connected"), "{err}");
}

#[test]
fn oversized_messages_are_refused_before_allocation() {
    let (_server, addr) = server(2);
    let mut c = client(&addr, 0, LONG);
    // The client refuses before sending, and stays usable.
    let err = c.set("big", &vec![0u8; MAX_VALUE + 1]).unwrap_err();
    assert!(
        matches!(err, Error::Usage(_)) && err.to_string().contains("1 MiB"),
        "{err}"
    );
    let err = c.set(&"k".repeat(MAX_KEY + 1), b"v").unwrap_err();
    assert!(err.to_string().contains("keys have 1 to 256"), "{err}");
    c.set("big", &vec![7u8; MAX_VALUE]).unwrap();
    assert_eq!(c.get("big").unwrap().len(), MAX_VALUE);

    // A raw client announcing a 4 GiB message is answered from the length alone: the reply
    // comes although the body is never sent, so the server cannot have waited for (or
    // allocated) it (had it waited, its read would have timed out and it would not answer).
    let mut raw = TcpStream::connect(&addr).unwrap();
    let hello = Enc::with_bytes(proto::MAGIC).u32(1).bytes16(TOKEN).finish();
    raw.write_all(&hello).unwrap();
    let welcome = proto::read_frame(&mut raw, 64, Some(proto::deadline_after(LONG)), LONG).unwrap();
    assert_eq!(welcome[0], proto::OK);
    raw.write_all(&(u32::MAX - 1).to_le_bytes()).unwrap();
    raw.write_all(&[proto::SET]).unwrap();
    let reply = proto::read_frame(&mut raw, 8192, Some(proto::deadline_after(HANG)), LONG).unwrap();
    let mut d = Dec::new(&reply);
    assert_eq!(
        (d.u8().unwrap(), d.u8().unwrap()),
        (proto::ERR, proto::ERR_USAGE)
    );
    let msg = String::from_utf8(d.bytes16(4096).unwrap().to_vec()).unwrap();
    assert!(
        msg.contains("4294967294 bytes") && msg.contains("limit"),
        "{msg}"
    );
    // ... and that rank is then gone: waiting on it fails at once, naming it.
    let err = c.barrier("after").unwrap_err().to_string();
    assert!(
        err.contains("rank 1 sent a message of 4294967294 bytes"),
        "{err}"
    );
}

#[test]
fn get_of_a_key_never_set_times_out_with_a_message() {
    let (_server, addr) = server(1);
    let timeout = Duration::from_millis(300);
    let mut c = client(&addr, 0, timeout);
    let started = Instant::now();
    let err = c.get("never/set").unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, Error::Rank(_)), "{err:?}");
    assert!(took >= timeout && took < timeout + HANG, "{took:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("'never/set' was not set within 300ms"),
        "{msg}"
    );
    // The connection stays in step after a timeout the server reported.
    c.set("now/set", b"1").unwrap();
    assert_eq!(c.get("now/set").unwrap(), b"1");
}

#[test]
fn barrier_timeout_names_the_missing_ranks() {
    let (_server, addr) = server(4);
    let timeout = Duration::from_millis(300);
    // Both ranks are connected before either waits: the window is the timeout, not the connect.
    let both = std::sync::Arc::new(std::sync::Barrier::new(2));
    let errs = on_ranks(2, move |r| {
        let mut c = client(&addr, r, timeout);
        both.wait();
        c.barrier("start").unwrap_err().to_string()
    });
    for e in errs {
        assert!(e.contains("barrier 'start' timed out after 300ms"), "{e}");
        assert!(e.contains("ranks 2, 3 never connected"), "{e}");
    }
}

#[test]
fn a_vanished_rank_fails_the_others_naming_it() {
    let (_server, addr) = server(4);
    let a = addr.clone();
    let vanisher = thread::spawn(move || {
        let c = client(&a, 3, LONG);
        thread::sleep(Duration::from_millis(200));
        c.vanish(); // as if the process died mid-barrier
    });
    let started = Instant::now();
    let errs = on_ranks(3, move |r| {
        let mut c = client(&addr, r, LONG);
        c.barrier("step").unwrap_err()
    });
    vanisher.join().unwrap();
    // Ended by the vanishing (the message says so), not by the timeout; the bound only
    // catches a hang.
    assert!(started.elapsed() < LONG + HANG, "{:?}", started.elapsed());
    for e in errs {
        assert!(matches!(e, Error::Rank(_)), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("barrier 'step' cannot complete: rank 3 closed its connection"),
            "{msg}"
        );
    }
}

#[test]
fn a_rank_that_said_goodbye_is_named_too() {
    let (_server, addr) = server(2);
    client(&addr, 1, LONG).close().unwrap();
    let err = client(&addr, 0, LONG)
        .all_gather("late", b"x")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("all_gather 'late' cannot complete: rank 1 left the store"),
        "{err}"
    );
    // A get does not fail for a clean goodbye: the key may have been set before it.
    let err = StoreClient::connect(&addr, TOKEN, 1, LONG)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("rank 1 has already left"), "{err}");
}

#[test]
fn dropping_the_server_fails_waiters_and_returns_promptly() {
    let (server, addr) = server(2);
    let waiter = thread::spawn(move || {
        let mut c = client(&addr, 0, LONG);
        let started = Instant::now();
        (c.get("never").unwrap_err().to_string(), started.elapsed())
    });
    // The waiter's get is inside the store before the store stops (however slowly it came).
    let limit = Instant::now() + HANG;
    while server.gets_waiting() == 0 && Instant::now() < limit {
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(server.gets_waiting(), 1);
    let started = Instant::now();
    drop(server);
    assert!(
        started.elapsed() < HANG,
        "drop took {:?}",
        started.elapsed()
    );
    // Failed by the shutdown (the message says so), not by its 10 s timeout.
    let (err, waited) = waiter.join().unwrap();
    assert!(err.contains("shutting down"), "{err}");
    assert!(waited < LONG + HANG, "{waited:?}");
}

#[test]
fn an_unreachable_store_is_reported_after_the_timeout() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let err = StoreClient::connect(&addr, TOKEN, 0, Duration::from_millis(300))
        .err()
        .unwrap();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < HANG,
        "{took:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("could not reach the rendezvous store at 127.0.0.1") && msg.contains("300ms"),
        "{msg}"
    );
    // The reason is that of the last real attempt, not a deadline that passed before one.
    assert!(
        msg.contains("connecting to 127.0.0.1") && !msg.contains("resolves to no address"),
        "{msg}"
    );
    let err = StoreClient::connect("no-port-here", TOKEN, 0, LONG)
        .err()
        .unwrap();
    assert!(matches!(err, Error::Usage(_)), "{err:?}");
}

#[test]
fn tokens_are_random_and_compared_whole() {
    let (a, b) = (random_token(), random_token());
    assert_ne!(a, b);
    assert!(same_token(b"abc", b"abc"));
    assert!(!same_token(b"abc", b"abd"));
    assert!(!same_token(b"abc", b"abcd"));
    assert!(!same_token(b"", b"a"));
    assert!(same_token(b"", b""));
}

#[test]
fn rank_lists_are_short() {
    assert_eq!(describe_ranks(&[3]), "rank 3");
    assert_eq!(describe_ranks(&[1, 2]), "ranks 1, 2");
    let many: Vec<usize> = (0..40).collect();
    assert!(describe_ranks(&many).ends_with("15, ... (40 in all)"));
}
