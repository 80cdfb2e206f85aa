//! Single-core memcpy bandwidth, the yardstick docs/PERFORMANCE.md compares busbw with.
//!
//! `cargo run --release --example memcpy -- [BYTES] [REPEATS]` prints one line per repeat and a
//! final `median_gbps=` line (GB/s = 1e9 bytes copied per second; each byte is read once and
//! written once).

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let bytes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64 << 20);
    let repeats: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let src = vec![1u8; bytes];
    let mut dst = vec![2u8; bytes];
    // One untimed copy faults in and warms both buffers.
    dst.copy_from_slice(&src);
    let mut rates: Vec<f64> = (0..repeats)
        .map(|_| {
            let start = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            bytes as f64 / start.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!(
        "bytes={bytes} repeats={repeats} min_gbps={:.2} max_gbps={:.2}",
        rates[0],
        rates[repeats - 1]
    );
    println!("median_gbps={:.2}", rates[repeats / 2]);
}
