//! Property tests of the store's decoders: arbitrary bytes and mutations of valid messages
//! never panic and never size memory from an unchecked length, and what is encoded decodes
//! back. The socket properties use real loopback connections.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use proptest::prelude::*;

use super::proto::{self, read_frame, Enc, ReadError};
use super::server::accept::decode_hello;
use super::server::session::{parse_request, Request};
use super::{StoreClient, StoreServer, MAX_KEY, MAX_TOKEN, MAX_VALUE};

const TOKEN: &[u8] = b"0123456789abcdef";

fn hello_payload(rank: u32, token: &[u8]) -> Vec<u8> {
    Enc::with_bytes(proto::MAGIC)
        .u32(rank)
        .bytes16(token)
        .finish()[4..]
        .to_vec()
}

fn key() -> impl Strategy<Value = String> {
    "[a-z0-9/_-]{1,64}"
}

/// Valid request payloads with what they decode to.
fn request() -> impl Strategy<Value = (Vec<u8>, Request)> {
    let value = proptest::collection::vec(any::<u8>(), 0..300);
    let wait = 0u64..1_000_000;
    prop_oneof![
        (key(), value.clone()).prop_map(|(k, v)| {
            let f = Enc::new(proto::SET).bytes16(k.as_bytes()).bytes32(&v);
            (f.finish()[4..].to_vec(), Request::Set(k, v))
        }),
        (wait.clone(), key()).prop_map(|(w, k)| {
            let f = Enc::new(proto::GET).u64(w).bytes16(k.as_bytes());
            (
                f.finish()[4..].to_vec(),
                Request::Get(Duration::from_millis(w), k),
            )
        }),
        (wait, key(), value).prop_map(|(w, k, v)| {
            let f = Enc::new(proto::GATHER)
                .u64(w)
                .bytes16(k.as_bytes())
                .bytes32(&v);
            let wait = Duration::from_millis(w);
            (
                f.finish()[4..].to_vec(),
                Request::Gather(proto::GATHER, wait, k, v),
            )
        }),
        Just((vec![proto::BYE], Request::Bye)),
    ]
}

/// Sends `bytes` on a fresh loopback connection, closes its write side, and reads one frame
/// of at most `max` bytes from the other end.
fn read_frame_of(bytes: &[u8], max: usize) -> Result<Vec<u8>, ReadError> {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut rx, _) = l.accept().unwrap();
    tx.write_all(bytes).unwrap();
    tx.shutdown(std::net::Shutdown::Write).unwrap();
    let wait = Duration::from_secs(30);
    read_frame(&mut rx, max, Some(proto::deadline_after(wait)), wait)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn hellos_round_trip(rank in any::<u32>(), token in proptest::collection::vec(any::<u8>(), 0..=MAX_TOKEN)) {
        let payload = hello_payload(rank, &token);
        prop_assert!(payload.len() <= proto::MAX_HELLO);
        prop_assert_eq!(decode_hello(&payload), Some((rank, token.as_slice())));
    }

    #[test]
    fn any_bytes_as_a_hello_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Some((_, token)) = decode_hello(&bytes) {
            prop_assert!(token.len() <= MAX_TOKEN);
        }
    }

    #[test]
    fn mutated_hellos_never_panic(
        rank in any::<u32>(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        // A strict prefix of a valid hello is never valid: every field is needed.
        let payload = hello_payload(rank, TOKEN);
        let n = cut.index(payload.len());
        prop_assert_eq!(decode_hello(&payload[..n]), None);
        // A mutated one may decode (a smaller token length makes one of its prefixes whole),
        // but never panics, and what it yields is bounded.
        let mut mutated = payload;
        let i = at.index(mutated.len());
        mutated[i] = byte;
        for end in [mutated.len(), n] {
            if let Some((_, token)) = decode_hello(&mutated[..end]) {
                prop_assert!(token.len() <= MAX_TOKEN);
            }
        }
    }

    #[test]
    fn requests_round_trip((payload, want) in request()) {
        prop_assert!(payload.len() <= proto::MAX_REQUEST);
        prop_assert_eq!(parse_request(&payload).unwrap(), want);
    }

    #[test]
    fn mutated_and_cut_requests_never_panic(
        (payload, _) in request(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        // A strict prefix of a valid request is never valid: every field is needed.
        let n = cut.index(payload.len());
        prop_assert!(parse_request(&payload[..n]).is_err());
        let mut p = payload;
        let i = at.index(p.len());
        p[i] = byte;
        if let Ok(Request::Set(k, v) | Request::Gather(_, _, k, v)) = parse_request(&p) {
            prop_assert!(k.len() <= MAX_KEY && v.len() <= MAX_VALUE);
        }
    }

    #[test]
    fn any_bytes_as_a_request_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse_request(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever arrives, read_frame returns at most `max` bytes, and a length over `max` is
    /// refused from the header alone.
    #[test]
    fn frames_from_the_wire_are_bounded(
        len in any::<u32>(),
        body in proptest::collection::vec(any::<u8>(), 0..200),
        max in 0usize..300,
    ) {
        let mut bytes = len.to_le_bytes().to_vec();
        bytes.extend_from_slice(&body);
        match read_frame_of(&bytes, max) {
            Ok(payload) => {
                prop_assert!(payload.len() <= max);
                prop_assert_eq!(&payload[..], &body[..len as usize]);
            }
            Err(ReadError::TooLarge(n)) => prop_assert!(n as usize > max && n == len),
            Err(_) => prop_assert!(len as usize > body.len()),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A store that has been sent arbitrary bytes (an opening a peer made up) still serves
    /// the job's rank.
    #[test]
    fn a_store_sent_garbage_still_serves(bytes in proptest::collection::vec(any::<u8>(), 1..400)) {
        let timeout = Duration::from_secs(20);
        let server = StoreServer::bind("127.0.0.1:0", TOKEN, 1, timeout).unwrap();
        let addr = server.local_addr().to_string();
        let mut junk = TcpStream::connect(&addr).unwrap();
        junk.write_all(&bytes).unwrap();
        let mut c = StoreClient::connect(&addr, TOKEN, 0, timeout).unwrap();
        c.set("k", b"v").unwrap();
        prop_assert_eq!(c.get("k").unwrap(), b"v".to_vec());
    }
}
