//! Rank 0's store under hostile peers, with the real binary: rank 0 of a two-rank torchrun-style
//! launch whose rank 1 never comes, while an impostor with another job's token claims rank 1
//! and a stray client sends garbage. Rank 0 must log both refusals with their addresses and
//! reasons, and its failure must say that a peer claiming rank 1 was refused, and why.
#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::{command, Spawned};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// A store hello: length, magic, rank, token (see src/launch/store/proto.rs).
fn store_hello(rank: u32, token: &[u8]) -> Vec<u8> {
    let mut payload = b"CBSTORE1".to_vec();
    payload.extend_from_slice(&rank.to_le_bytes());
    payload.extend_from_slice(&(token.len() as u16).to_le_bytes());
    payload.extend_from_slice(token);
    let mut frame = (payload.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&payload);
    frame
}

/// Connects to rank 0's store once it listens (a bound that only catches a hang).
fn connect_when_up(port: u16) -> TcpStream {
    let since = Instant::now();
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => return s,
            Err(e) if since.elapsed() > Duration::from_secs(60) => panic!("no store: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Sends `bytes` and reads the answer until the store closes the connection.
fn answer_to(mut s: TcpStream, bytes: &[u8]) -> Vec<u8> {
    s.write_all(bytes).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got)
        .expect("the store closes a refused connection");
    got
}

#[test]
fn rank_0_logs_refused_peers_and_names_them_when_a_rank_never_comes() {
    let _guard = common::serial();
    let (_tmp, out) = common::tempdir();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let args = [
        "sweep",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
        "--iters",
        "1",
        // Long enough that both connections below are answered before rank 0 gives up on
        // rank 1, on a loaded machine too (the test waits this long: rank 1 never comes).
        "--timeout",
        "10s",
    ];
    let mut cmd = command(&args);
    cmd.env("RANK", "0")
        .env("WORLD_SIZE", "2")
        .env("LOCAL_RANK", "0")
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .env("COLLBENCH_TOKEN", TOKEN)
        .env("COLLBENCH_NODE_NAME", "n0");
    let rank0 = Spawned::start(cmd);
    let garbage = answer_to(connect_when_up(port), b"GET / HTTP/1.1\r\n\x1b[2J\r\n\r\n");
    assert!(!garbage.is_empty(), "garbage got no answer");
    let other_job = [0xabu8; 16];
    let impostor = answer_to(connect_when_up(port), &store_hello(1, &other_job));
    assert!(
        String::from_utf8_lossy(&impostor).contains("wrong token"),
        "{impostor:?}"
    );
    let run = rank0.finish(Instant::now(), common::hang_limit(Duration::from_secs(60)));
    let err = &run.stderr;
    assert_ne!(run.code(), 0, "{err}");
    assert!(
        err.contains("rank 0's store refused 127.0.0.1:")
            && err.contains(": not a collbench store hello (it starts with \"GET")
            && err.contains(": wrong token (claimed rank 1)"),
        "{err}"
    );
    assert!(
        err.contains("rank 1 never connected (a peer claiming rank 1 (127.0.0.1:")
            && err.contains("was refused: wrong token"),
        "{err}"
    );
    assert!(
        !err.contains('\x1b'),
        "raw peer bytes reached stderr: {err}"
    );
}
