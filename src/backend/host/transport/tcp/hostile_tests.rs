//! The mesh's listener under idle and hostile peers, over real loopback sockets: a crowd of
//! idle connections, garbage and impostors must not keep a rank out, and every refusal is
//! logged with the peer's address and the reason.

use std::io::Write;
use std::net::TcpStream;
use std::thread;

use super::accept::{self, MAX_PENDING};
use super::hello::{Hello, HELLO_LEN};
use super::tests::{listeners, TIMEOUT, TOKEN};
use super::*;
use crate::launch::peers::{Refusals, MAX_LOGGED};
use crate::launch::store::enough_descriptors;

const IDLE: usize = 1000;

fn hello(token: u64, rank: u32, nranks: u32) -> [u8; HELLO_LEN] {
    Hello {
        token,
        rank,
        nranks,
    }
    .encode()
}

/// What rank 0's accepting side ended with.
struct Accepted {
    result: Result<()>,
    refused: Refusals,
    streams: Vec<Option<TcpStream>>,
}

/// Rank 0's accepting side alone, in a thread, so that the test can read its refusals.
fn accept_as_rank_0(
    l0: TcpListener,
    nranks: usize,
    timeout: Duration,
) -> thread::JoinHandle<Accepted> {
    thread::spawn(move || {
        let ours = Hello {
            token: TOKEN,
            rank: 0,
            nranks: nranks as u32,
        };
        let mut streams: Vec<Option<TcpStream>> = (0..nranks).map(|_| None).collect();
        let mut refused = Refusals::new("rank 0's TCP mesh");
        let within = (Instant::now() + timeout, timeout);
        let result = accept::accept_all(0, ours, &l0, within, &mut streams, &mut refused);
        Accepted {
            result,
            refused,
            streams,
        }
    })
}

#[test]
fn idle_crowds_garbage_and_impostors_do_not_keep_a_rank_out() {
    if !enough_descriptors(IDLE as u64 + 200, "idle_crowds_garbage_and_impostors...") {
        return;
    }
    let (mut ls, addrs) = listeners(2);
    let l1 = ls.pop().unwrap();
    let rank0 = accept_as_rank_0(ls.pop().unwrap(), 2, TIMEOUT);
    let idle: Vec<TcpStream> = (0..IDLE)
        .filter_map(|_| TcpStream::connect_timeout(&addrs[0], Duration::from_secs(5)).ok())
        .collect();
    assert!(idle.len() > IDLE / 2, "only {} connected", idle.len());
    for bytes in [
        b"GET / HTTP/1.1\r\n\r\n\x1b[2J\0\0\0\0\0\0".to_vec(),
        hello(TOKEN ^ 1, 1, 2).to_vec(),
        hello(TOKEN, 1, 3).to_vec(),
    ] {
        TcpStream::connect(addrs[0])
            .unwrap()
            .write_all(&bytes)
            .unwrap();
    }
    let t1 = TcpTransport::connect(1, 2, l1, &addrs, TOKEN, TIMEOUT).unwrap();
    let got = rank0.join().unwrap();
    let lines = got.refused.lines;
    assert!(got.result.is_ok() && got.streams[1].is_some());
    assert_eq!(t1.peer_addr(0), Some(addrs[0]));
    assert_eq!(lines.len(), MAX_LOGGED, "{lines:#?}");
    assert!(lines
        .iter()
        .all(|l| l.contains("rank 0's TCP mesh refused 127.0.0.1:")));
    let crowded = format!("when {MAX_PENDING} connections were waiting");
    assert!(lines.iter().any(|l| l.contains(&crowded)), "{lines:#?}");
    drop(idle);
}

#[test]
fn refusals_are_logged_and_named_when_the_rank_never_comes() {
    let (mut ls, addrs) = listeners(2);
    // The impostor's hello is queued before rank 0 starts accepting, and rank 0 waits 5 s: the
    // refusal does not race the deadline, however loaded the machine.
    let short = Duration::from_secs(5);
    let mut impostor = TcpStream::connect(addrs[0]).unwrap();
    impostor.write_all(&hello(TOKEN ^ 1, 1, 2)).unwrap();
    let rank0 = accept_as_rank_0(ls.remove(0), 2, short);
    let got = rank0.join().unwrap();
    let err = got.result.expect_err("rank 1 never came").to_string();
    assert!(
        err.contains("waiting for rank(s) [1]")
            && err.contains("(a peer claiming rank 1 (127.0.0.1:")
            && err.contains("was refused: wrong token)"),
        "{err}"
    );
    // Through the public connect too: the message names the refused impostor.
    let (mut ls, addrs) = listeners(2);
    let l0 = ls.remove(0);
    let mut impostor = TcpStream::connect(addrs[0]).unwrap();
    impostor.write_all(&hello(TOKEN ^ 1, 1, 2)).unwrap();
    let err = TcpTransport::connect(0, 2, l0, &addrs, TOKEN, short)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("was refused: wrong token"), "{err}");
}

#[test]
fn refusal_lines_show_garbage_escaped_and_silence_by_its_deadline() {
    let (mut ls, addrs) = listeners(2);
    // Both connections wait in the backlog before rank 0 accepts, and rank 0 waits 10 s past
    // the silent one's hello deadline: the refusal does not race the end of the wait.
    let wait = accept::HELLO_LIMIT + Duration::from_secs(10);
    let mut garbage = TcpStream::connect(addrs[0]).unwrap();
    garbage
        .write_all(b"\x1b[31mGET / HTTP/1.1\r\n\r\n")
        .unwrap();
    let _silent = TcpStream::connect(addrs[0]).unwrap();
    let rank0 = accept_as_rank_0(ls.remove(0), 2, wait);
    let got = rank0.join().unwrap();
    assert!(got.result.is_err());
    let lines = got.refused.lines;
    let has = |what: &str| lines.iter().any(|l| l.contains(what));
    assert!(
        has(r#"not a collbench mesh hello (starts with "\x1b[31mGET")"#),
        "{lines:#?}"
    );
    assert!(has("no complete hello within 5s"), "{lines:#?}");
    assert!(lines.iter().all(|l| !l.contains('\x1b')), "{lines:#?}");
}

#[test]
fn running_out_of_descriptors_does_not_end_the_mesh() {
    let mut refused = Refusals::new("rank 0's TCP mesh");
    for errno in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
        let e = io::Error::from_raw_os_error(errno);
        assert!(accept::after_accept_error(e, &mut Vec::new(), &mut refused).is_ok());
    }
    let e = io::Error::from_raw_os_error(libc::EBADF);
    assert!(accept::after_accept_error(e, &mut Vec::new(), &mut refused).is_err());
}

mod props {
    use proptest::prelude::*;

    use super::super::accept::judge;
    use super::super::hello::{Hello, HELLO_LEN};
    use super::TOKEN;

    fn ours() -> Hello {
        Hello {
            token: TOKEN,
            rank: 1,
            nranks: 4,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn hellos_round_trip(token in any::<u64>(), rank in any::<u32>(), nranks in any::<u32>()) {
            let h = Hello { token, rank, nranks };
            prop_assert_eq!(Hello::decode(&h.encode()), Some(h));
        }

        /// Arbitrary 24 bytes never panic, and a refusal's reason is printable: no byte of
        /// the peer's reaches the log unescaped.
        #[test]
        fn any_hello_is_judged_with_a_printable_reason(bytes in any::<[u8; HELLO_LEN]>()) {
            let streams = [None, None, None, None];
            match judge(&bytes, ours(), &streams) {
                Ok(r) => prop_assert!((2..4).contains(&r)),
                Err((why, claimed)) => {
                    prop_assert!(why.chars().all(|c| !c.is_control()), "{}", why);
                    prop_assert!(claimed.map_or(true, |r| (2..4).contains(&r)));
                }
            }
        }

        #[test]
        fn mutated_hellos_are_admitted_only_when_still_right(
            rank in 2u32..4,
            at in 0..HELLO_LEN,
            byte in any::<u8>(),
        ) {
            let good = Hello { rank, ..ours() }.encode();
            let mut bytes = good;
            bytes[at] = byte;
            let streams = [None, None, None, None];
            match judge(&bytes, ours(), &streams) {
                Ok(r) => prop_assert!(bytes[16..20] == (r as u32).to_le_bytes() && bytes[..16] == good[..16]),
                Err(_) => prop_assert!(bytes != good),
            }
        }
    }
}
