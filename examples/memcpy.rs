//! memcpy bandwidth, the yardstick docs/PERFORMANCE.md compares busbw with.
//!
//! `cargo run --release --example memcpy -- [BYTES] [REPEATS] [THREADS]` copies BYTES (default
//! 64 MiB) REPEATS times (default 20) on each of THREADS threads at once (default 1), every
//! thread between buffers of its own, allocated as the collectives' call buffers are (huge
//! pages from 4 MiB). With THREADS = the number of cores it measures what each core can copy
//! while every other core copies too: the rate a large collective on a full machine is bound by
//! (scripts/host_vs_mpi.py turns it into a busbw bound per op). Prints one line with the range
//! and a final `median_gbps=` line: the median over every thread's repeats, in GB/s = 1e9 bytes
//! copied per second (each byte read once and written once).

use std::sync::{Arc, Barrier};
use std::time::Instant;

use collbench::backend::buffers::advised;
use collbench::units::parse_size;

/// The most threads and bytes this example takes (bounds before they size memory).
const MAX_THREADS: usize = 256;
const MAX_BYTES: usize = 1 << 32;
const MAX_REPEATS: usize = 1_000_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (bytes, repeats, threads) = match parse(&args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("memcpy: {e}; usage: memcpy [BYTES (64M)] [REPEATS (20)] [THREADS (1)]");
            std::process::exit(2);
        }
    };
    let start = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || copy_rates(bytes, repeats, &start))
        })
        .collect();
    let mut rates: Vec<f64> = workers
        .into_iter()
        .flat_map(|w| w.join().expect("a copying thread panicked"))
        .collect();
    rates.sort_by(f64::total_cmp);
    println!(
        "bytes={bytes} repeats={repeats} threads={threads} min_gbps={:.2} max_gbps={:.2}",
        rates[0],
        rates[rates.len() - 1]
    );
    println!("median_gbps={:.2}", rates[rates.len() / 2]);
}

/// BYTES (with K/M/G suffixes), REPEATS and THREADS, each bounded, defaults where absent.
fn parse(args: &[String]) -> Result<(usize, usize, usize), String> {
    let bytes = match args.first() {
        Some(a) => parse_size(a).map_err(|e| e.to_string())?,
        None => 64 << 20,
    };
    let count = |i: usize, default: usize, max: usize, what: &str| match args.get(i) {
        None => Ok(default),
        Some(a) => match a.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(format!(
                "{what} {a:?} is not a whole number from 1 to {max}"
            )),
        },
    };
    if !(1..=MAX_BYTES).contains(&bytes) {
        return Err(format!("BYTES {bytes} is not from 1 to {MAX_BYTES}"));
    }
    Ok((
        bytes,
        count(1, 20, MAX_REPEATS, "REPEATS")?,
        count(2, 1, MAX_THREADS, "THREADS")?,
    ))
}

/// One thread's copy rates (GB/s), each repeat started together with the other threads'.
fn copy_rates(bytes: usize, repeats: usize, start: &Barrier) -> Vec<f64> {
    let mut src = advised(bytes);
    src.fill(0x0101_0101_0101_0101);
    let mut dst = advised(bytes);
    let (src, dst): (&[u8], &mut [u8]) = (
        &bytemuck::cast_slice(&src)[..bytes],
        &mut bytemuck::cast_slice_mut(&mut dst)[..bytes],
    );
    // One untimed copy warms both buffers.
    dst.copy_from_slice(src);
    (0..repeats)
        .map(|_| {
            start.wait();
            let t = Instant::now();
            dst.copy_from_slice(std::hint::black_box(src));
            std::hint::black_box(&dst);
            bytes as f64 / t.elapsed().as_secs_f64() / 1e9
        })
        .collect()
}
