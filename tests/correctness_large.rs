//! Exactness at the sizes users measure: every op, in and out of place, at 256 MiB on 2 ranks
//! and 64 MiB on 3 and 4 ranks (past the default sweep's largest size), over shared memory and
//! over TCP, each op with its default algorithm. tests/correctness.rs covers every algorithm
//! and dtype at odd sizes up to 1 MB; this covers the large end, where buffers wrap the
//! transports' rings many times and per-rank blocks run to tens of MiB.

mod common;

use std::time::Duration;

use common::{expected_bytes, summary, sweep_ok, tempdir};

const OPS: &str =
    "allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv,gather,scatter";

/// One launch at `ranks` ranks of every op at `size` over `transport`: exactness, not speed, so
/// one call per point and its check, no warm-up.
fn exact_at(ranks: usize, size: &str, bytes: usize, transport: &str) {
    let _serial = common::serial();
    let (_tmp, out) = tempdir();
    let ranks_text = ranks.to_string();
    #[rustfmt::skip]
    let args = [
        "--op", OPS, "--in-place", "both", "--ranks", &ranks_text, "--world-sizes", &ranks_text,
        "-b", size, "-e", size, "--iters", "1", "--warmup", "0", "--timeout", "120s",
        "--transport", transport,
    ];
    sweep_ok(&args, &out, common::hang_limit(Duration::from_secs(600)));
    let rows = summary(&out);
    for op in OPS.split(',') {
        for in_place in [false, true] {
            let of: Vec<_> = rows
                .iter()
                .filter(|r| r.key.op.name() == op && r.key.in_place == in_place)
                .collect();
            assert!(!of.is_empty(), "{op} in_place {in_place}: no point");
            for r in of {
                let k = &r.key;
                assert_eq!(k.bytes, expected_bytes(op, "f32", bytes, ranks), "{k:?}");
                assert_eq!((k.world, r.wrong), (ranks, 0), "{transport}: {k:?}");
            }
        }
    }
}

#[test]
fn every_op_is_exact_at_256_mib_on_2_ranks_over_shared_memory() {
    exact_at(2, "256M", 256 << 20, "shm");
}

#[test]
fn every_op_is_exact_at_256_mib_on_2_ranks_over_tcp() {
    exact_at(2, "256M", 256 << 20, "tcp");
}

#[test]
fn every_op_is_exact_at_64_mib_on_3_and_4_ranks_over_shared_memory() {
    exact_at(3, "64M", 64 << 20, "shm");
    exact_at(4, "64M", 64 << 20, "shm");
}

#[test]
fn every_op_is_exact_at_64_mib_on_3_and_4_ranks_over_tcp() {
    exact_at(3, "64M", 64 << 20, "tcp");
    exact_at(4, "64M", 64 << 20, "tcp");
}
