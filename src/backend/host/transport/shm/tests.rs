//! Two ranks as two threads, each with its own mapping of one segment: messages must arrive
//! exactly, whichever way they move (staged, single-copy, or single-copy refused and staged).

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::ShmTransport;
use crate::backend::host::layout::{Layout, Shared};
use crate::backend::host::transport::single_copy::CopyMode;
use crate::backend::host::transport::{Combine, Many, Transport};
use crate::backend::host::wait::WaitPolicy;
use crate::collective::{DType, ReduceOp};

/// Not a multiple of the 64 KiB slot, and more than the 8-slot ring holds.
const LEN: usize = (1 << 20) + 12;

fn pattern(rank: usize, salt: u32) -> Vec<u8> {
    let words: Vec<f32> = (0..LEN / 4)
        .map(|i| ((i as u32 * 7 + salt) % 1000) as f32 + rank as f32)
        .collect();
    bytemuck::cast_slice(&words).to_vec()
}

/// What one rank saw: the plain message, the reduced one, and its single-copy byte count.
type Seen = (Vec<u8>, Vec<u8>, u64);

/// Rank `rank` swaps a plain message with its peer (as one the receiver copies), then a reduced
/// one (`out = mine + theirs`).
fn exchange(mut t: ShmTransport, rank: usize) -> Seen {
    let peer = 1 - rank;
    let (mine, mut got) = (pattern(rank, 1), vec![0u8; LEN]);
    t.send_recv_copy(Some((peer, &mine)), Some((peer, &mut got, Combine::Copy)))
        .unwrap();
    let local = pattern(rank, 2);
    let mut sum = vec![0u8; LEN];
    let how = Combine::ReduceWith {
        dtype: DType::F32,
        op: ReduceOp::Sum,
        local: &local,
    };
    t.send_recv(Some((peer, &local)), Some((peer, &mut sum, how)))
        .unwrap();
    (got, sum, t.single_copy_bytes())
}

/// Runs `body` on `n` ranks, each a thread with its own mapping of one segment and the
/// transport in `mode` (rank 0 advertising `pid_of_rank0` where given); their results in rank
/// order, and the segment.
fn on_ranks<R: Send + 'static>(
    n: usize,
    mode: CopyMode,
    pid_of_rank0: Option<u32>,
    body: fn(ShmTransport, usize) -> R,
) -> (Vec<R>, Shared) {
    let shared = Shared::create(Layout::new(n, 1)).unwrap();
    let fd = shared.segment().fd();
    let handles: Vec<_> = (0..n)
        .map(|rank| {
            // SAFETY: dup of a descriptor this test owns; the thread's Shared takes the copy.
            let fd = unsafe { libc::dup(fd) };
            std::thread::spawn(move || {
                let sh = Rc::new(Shared::attach(fd, Layout::new(n, 1)).unwrap());
                let mut t = ShmTransport::new(sh, rank, WaitPolicy::for_load(n, 1))
                    .with_stall_timeout(Duration::from_secs(20), (0..n).collect())
                    .with_copy_mode(mode);
                if let (0, Some(pid)) = (rank, pid_of_rank0) {
                    t = t.advertise_pid(pid);
                }
                body(t, rank)
            })
        })
        .collect();
    (
        handles.into_iter().map(|h| h.join().unwrap()).collect(),
        shared,
    )
}

/// Runs [`exchange`] on both ranks; `pid_of_rank0` replaces rank 0's advertised process id.
fn run_pair(mode: CopyMode, pid_of_rank0: Option<u32>) -> ([Seen; 2], Shared) {
    let (seen, shared) = on_ranks(2, mode, pid_of_rank0, exchange);
    let mut seen = seen.into_iter();
    ([seen.next().unwrap(), seen.next().unwrap()], shared)
}

fn expected_sum() -> Vec<u8> {
    let (a, b) = (pattern(0, 2), pattern(1, 2));
    let a: &[f32] = bytemuck::cast_slice(&a);
    let b: &[f32] = bytemuck::cast_slice(&b);
    let sum: Vec<f32> = a.iter().zip(b).map(|(x, y)| x + y).collect();
    bytemuck::cast_slice(&sum).to_vec()
}

fn assert_exact(seen: &[Seen; 2]) {
    for (rank, (got, sum, _)) in seen.iter().enumerate() {
        assert!(*got == pattern(1 - rank, 1), "rank {rank}: plain message");
        assert!(*sum == expected_sum(), "rank {rank}: reduced message");
    }
}

#[test]
fn staged_and_single_copy_deliver_identical_bytes() {
    let (staged, _) = run_pair(CopyMode::Staged, None);
    let (single, _) = run_pair(CopyMode::Single, None);
    assert_exact(&staged);
    assert_exact(&single);
    for rank in 0..2 {
        assert_eq!(staged[rank].2, 0, "staged mode read single-copy");
        assert_eq!(single[rank].2, 2 * LEN as u64, "both messages single-copy");
        assert!(staged[rank].0 == single[rank].0 && staged[rank].1 == single[rank].1);
    }
}

#[test]
fn auto_mode_reads_large_copied_messages_single_copy() {
    let (seen, _) = run_pair(CopyMode::Auto, None);
    assert_exact(&seen);
    // The plain message single-copy, the reduced one through the slots.
    assert_eq!((seen[0].2, seen[1].2), (LEN as u64, LEN as u64));
}

#[test]
fn a_refused_read_falls_back_to_staged_copies() {
    // No process has this id (pid_max is at most 2^22), so rank 1's reads of rank 0 fail.
    let (seen, shared) = run_pair(CopyMode::Single, Some(1 << 30));
    assert_exact(&seen);
    assert_eq!(seen[1].2, 0, "rank 1 read nothing single-copy");
    assert_eq!(
        seen[0].2,
        2 * LEN as u64,
        "rank 0 still reads rank 1 directly"
    );
    assert_eq!(shared.single_copy_refused(0, 1).load(Ordering::Relaxed), 1);
    assert_eq!(shared.single_copy_refused(1, 0).load(Ordering::Relaxed), 0);
    assert_eq!(shared.fallback_noted().load(Ordering::Relaxed), 1);
}

/// Four ranks, each sending a different message to every other at once and receiving all of
/// theirs (`exchange_all`); the bytes each rank got, in order of sender.
fn all_to_all_at_once(mode: CopyMode) -> Vec<Vec<u8>> {
    on_ranks(4, mode, None, send_to_all_at_once).0
}

fn send_to_all_at_once(mut t: ShmTransport, rank: usize) -> Vec<u8> {
    const N: usize = 4;
    let input: Vec<u8> = (0..N).flat_map(|to| pattern(rank, to as u32)).collect();
    let mut output = vec![0u8; N * LEN];
    // Peers in a different order on each side, so no rank's lists pair up.
    let send_at = |i: usize| {
        let to = (rank + 1 + i) % N;
        (to, to * LEN..(to + 1) * LEN)
    };
    let recv_at = |i: usize| {
        let from = (rank + N - 1 - i) % N;
        (from, from * LEN..(from + 1) * LEN)
    };
    let sends = Many {
        count: N - 1,
        at: &send_at,
        buf: &input[..],
    };
    let recvs = Many {
        count: N - 1,
        at: &recv_at,
        buf: &mut output[..],
    };
    t.exchange_all(sends, recvs).unwrap();
    output
}

#[test]
fn every_message_in_flight_at_once_arrives_exactly() {
    for mode in [CopyMode::Staged, CopyMode::Single, CopyMode::Auto] {
        for (rank, got) in all_to_all_at_once(mode).iter().enumerate() {
            for from in (0..4).filter(|&f| f != rank) {
                let block = &got[from * LEN..(from + 1) * LEN];
                assert!(
                    *block == pattern(from, rank as u32),
                    "{mode:?}: {from} -> {rank}"
                );
            }
            assert!(got[rank * LEN..(rank + 1) * LEN].iter().all(|&b| b == 0));
        }
    }
}

/// Rank 0 of three receives two messages from each of ranks 1 and 2, written into place by them
/// (`recv_written_while`), twice, with its own work in between; `pid_of_rank0` replaces the
/// process id its offers name. What rank 0 got each time, and its single-copy byte count.
fn gather_written(mode: CopyMode, pid_of_rank0: Option<u32>) -> (Vec<Vec<u8>>, u64, Shared) {
    let (mut all, shared) = on_ranks(3, mode, pid_of_rank0, written_rounds);
    let (got, bytes) = all.swap_remove(0);
    (got, bytes, shared)
}

/// Both rounds of [`gather_written`] on one rank.
fn written_rounds(mut t: ShmTransport, rank: usize) -> (Vec<Vec<u8>>, u64) {
    let rounds = (0..2u32).map(|round| match rank {
        0 => receive_written(&mut t, round),
        _ => {
            for part in 0..2 {
                let salt = round * 10 + part;
                t.send_written(0, &pattern(rank, salt)).unwrap();
            }
            Vec::new()
        }
    });
    let got: Vec<Vec<u8>> = rounds.collect();
    (got, t.single_copy_bytes())
}

/// Rank 0's side of [`gather_written`]: message `part` of rank `from` lands in block
/// `2 * (from - 1) + part`; its own work writes block 4.
fn receive_written(t: &mut ShmTransport, round: u32) -> Vec<u8> {
    let mut out = vec![0u8; 5 * LEN];
    let at = |i: usize| (1 + i / 2, i * LEN..(i + 1) * LEN);
    let recvs = Many {
        count: 4,
        at: &at,
        buf: &mut out[..],
    };
    let own = pattern(0, round);
    t.recv_written_while(recvs, &mut |buf: &mut [u8]| {
        buf[4 * LEN..].copy_from_slice(&own)
    })
    .unwrap();
    out
}

fn assert_gathered(got: &[Vec<u8>]) {
    for (round, out) in got.iter().enumerate() {
        for i in 0..4 {
            let salt = round as u32 * 10 + (i % 2) as u32;
            let want = pattern(1 + i / 2, salt);
            assert!(
                out[i * LEN..(i + 1) * LEN] == want,
                "round {round} block {i}"
            );
        }
        assert!(
            out[4 * LEN..] == pattern(0, round as u32),
            "round {round} own"
        );
    }
}

#[test]
fn senders_write_several_messages_into_place_in_every_mode() {
    for (mode, written) in [
        (CopyMode::Staged, 0),
        (CopyMode::Single, 8 * LEN as u64),
        (CopyMode::Auto, 8 * LEN as u64),
    ] {
        let (got, bytes, _) = gather_written(mode, None);
        assert_gathered(&got);
        assert_eq!(bytes, written, "{mode:?}");
    }
}

#[test]
fn a_refused_write_falls_back_to_staged_copies() {
    // No process has this id, so every write into rank 0 fails; the second round's offers
    // already say "through the slots".
    let (got, bytes, shared) = gather_written(CopyMode::Single, Some(1 << 30));
    assert_gathered(&got);
    assert_eq!(bytes, 0, "nothing written into rank 0");
    for from in 1..3 {
        assert_eq!(
            shared.single_copy_refused(from, 0).load(Ordering::Relaxed),
            1
        );
    }
    assert_eq!(shared.fallback_noted().load(Ordering::Relaxed), 1);
}
