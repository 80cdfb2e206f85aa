//! Compute beside a rank's collectives (`sweep --with-compute`): a thread that runs one kernel
//! over and over until told to stop, counting its work, so that its rate with the collectives
//! running can be set against its rate without them.
//!
//! Two kernels, for the two ways a training step's compute meets its communication on a CPU:
//! - `memory`: STREAM's triad (`a[i] = b[i] + s·c[i]`, McCalpin's STREAM benchmark) over three
//!   arrays of [`MEMORY_ARRAY_BYTES`] each, far past a core's caches: it competes with the
//!   collective's copies for memory bandwidth, as an elementwise or optimizer kernel does.
//! - `cache`: multiply-adds over [`CACHE_ARRAY_BYTES`], resident in the core's first-level
//!   cache: it competes for the core itself and nothing else, as a tiled GEMM mostly does.
//!
//! What neither models: a GPU's streaming multiprocessors shared between a GEMM and NCCL's
//! kernels, its HBM and its copy engines; on the host the collective is run by the rank's own
//! thread, so a kernel on the same core takes time from it directly.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::plan::ComputeKind;

/// Each of the triad's three arrays: 16 MiB, 48 MiB in all, past the last-level cache a core
/// has to itself on current servers.
pub const MEMORY_ARRAY_BYTES: usize = 16 << 20;
/// The cache kernel's array: 16 KiB, within any first-level data cache.
pub const CACHE_ARRAY_BYTES: usize = 16 << 10;
/// The fewest of a kernel's counts a rate is taken over: at about 10 µs a count, 160 µs.
pub const MIN_COUNTS: u64 = 16;

/// Bytes a rank's load holds (the launcher counts them before the ranks start).
pub fn load_bytes(kind: ComputeKind) -> usize {
    match kind {
        ComputeKind::Memory => 3 * MEMORY_ARRAY_BYTES,
        ComputeKind::Cache => CACHE_ARRAY_BYTES,
        ComputeKind::Gemm => 0,
    }
}

/// A kernel running on its own thread.
pub struct ComputeLoad {
    stop: Arc<AtomicBool>,
    work: Arc<AtomicU64>,
    /// The units of one pass over the kernel's arrays.
    pass_units: u64,
    /// The units of one count (the step the work moves in).
    step_units: u64,
    thread: Option<JoinHandle<()>>,
}

/// Work done over a stretch of time: the kernel's own unit (bytes moved for `memory`, flops for
/// `cache`) and the seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    pub units: u64,
    pub at: Instant,
}

impl Work {
    /// Units per second from `self` to `later`; `None` over too little work to tell a rate
    /// (fewer than [`MIN_COUNTS`] of the kernel's counts: the count moves in steps).
    pub fn rate_to(self, later: Work, step: u64) -> Option<f64> {
        let s = later.at.duration_since(self.at).as_secs_f64();
        let units = later.units.saturating_sub(self.units);
        (s > 0.0 && units >= MIN_COUNTS * step).then(|| units as f64 / s)
    }
}

impl ComputeLoad {
    /// Starts `kind` on a new thread, pinned to `cpu` where one is given.
    pub fn start(kind: ComputeKind, cpu: Option<usize>) -> std::io::Result<ComputeLoad> {
        if kind == ComputeKind::Gemm {
            // The plan refuses it on the host; this keeps a direct caller from a wrong load.
            return Err(std::io::Error::other(
                "the gemm load runs on the nccl backend",
            ));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let work = Arc::new(AtomicU64::new(0));
        let (s, w) = (stop.clone(), work.clone());
        let thread = std::thread::Builder::new()
            .name(format!("compute-{}", kind.name()))
            .spawn(move || {
                if let Some(cpu) = cpu {
                    // Unpinned, the load still runs: the scheduler places it.
                    let _ = super::affinity::bind_to(cpu);
                }
                match kind {
                    ComputeKind::Memory => triad(&s, &w),
                    ComputeKind::Cache => multiply_add(&s, &w),
                    ComputeKind::Gemm => {}
                }
            })?;
        let (pass_units, step_units) = match kind {
            ComputeKind::Memory => (3 * MEMORY_ARRAY_BYTES, 3 * TRIAD_CHUNK_BYTES),
            ComputeKind::Cache | ComputeKind::Gemm => {
                let flops = 2 * MULTIPLY_ADD_PASSES * CACHE_ARRAY_BYTES / 4;
                (flops, flops)
            }
        };
        Ok(ComputeLoad {
            stop,
            work,
            pass_units: pass_units as u64,
            step_units: step_units as u64,
            thread: Some(thread),
        })
    }

    /// The work done so far.
    pub fn work(&self) -> Work {
        Work {
            units: self.work.load(Ordering::Relaxed),
            at: Instant::now(),
        }
    }

    /// Waits until the kernel has made one whole pass over its arrays (their pages touched and
    /// cached where they fit), or 10 s where it cannot: a rate taken before would count the
    /// start-up.
    pub fn warmed(self) -> ComputeLoad {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.work.load(Ordering::Relaxed) < self.pass_units && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        self
    }

    /// Its rate over `span`: the caller waits while it runs.
    pub fn rate_over(&self, span: Duration) -> Option<f64> {
        let from = self.work();
        std::thread::sleep(span);
        self.rate_since(from)
    }

    /// Its rate since `from`, one of its own [`ComputeLoad::work`]s.
    pub fn rate_since(&self, from: Work) -> Option<f64> {
        from.rate_to(self.work(), self.step_units)
    }
}

impl Drop for ComputeLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // A kernel that panicked has nothing left to stop.
            let _ = t.join();
        }
    }
}

/// The triad's step between two counts, per array: 64 KiB (about 10 µs at 20 GB/s).
const TRIAD_CHUNK_BYTES: usize = 64 << 10;

/// STREAM's triad over arrays past the caches, counting the bytes it moves (24 per element).
fn triad(stop: &AtomicBool, work: &AtomicU64) {
    let n = MEMORY_ARRAY_BYTES / 8;
    let (mut a, b, c) = (vec![0.0f64; n], vec![1.0f64; n], vec![2.0f64; n]);
    let chunk = TRIAD_CHUNK_BYTES / 8;
    let s = std::hint::black_box(3.0);
    while !stop.load(Ordering::Relaxed) {
        for start in (0..n).step_by(chunk) {
            let end = (start + chunk).min(n);
            for ((x, y), z) in a[start..end]
                .iter_mut()
                .zip(&b[start..end])
                .zip(&c[start..end])
            {
                *x = y + s * z;
            }
            work.fetch_add(24 * (end - start) as u64, Ordering::Relaxed);
            if stop.load(Ordering::Relaxed) {
                break;
            }
        }
        std::hint::black_box(&mut a);
    }
}

/// Passes of the cache kernel between two counts (about 10 µs on a 3 GHz core).
const MULTIPLY_ADD_PASSES: usize = 32;

/// Multiply-adds over a first-level-cache array, counting flops (2 per element and pass).
fn multiply_add(stop: &AtomicBool, work: &AtomicU64) {
    let mut x = vec![1.0f32; CACHE_ARRAY_BYTES / 4];
    let (m, k) = (
        std::hint::black_box(0.999_f32),
        std::hint::black_box(0.001_f32),
    );
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..MULTIPLY_ADD_PASSES {
            for v in x.iter_mut() {
                // A multiply and an add (not `mul_add`, a library call where the target has
                // no fused instruction): vectorised on any x86-64.
                *v = *v * m + k;
            }
        }
        std::hint::black_box(&mut x);
        work.fetch_add(
            (2 * MULTIPLY_ADD_PASSES * x.len()) as u64,
            Ordering::Relaxed,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kernels_do_work_and_stop_when_dropped() {
        for kind in [ComputeKind::Memory, ComputeKind::Cache] {
            let load = ComputeLoad::start(kind, None).unwrap().warmed();
            let began = load.work();
            // No bound on the rate: only that work is counted once the kernel has run.
            let deadline = Instant::now() + Duration::from_secs(60);
            while load.work().units == began.units && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(load.work().units > began.units, "{kind:?} did no work");
            assert!(load
                .rate_over(Duration::from_millis(5))
                .is_some_and(|r| r > 0.0));
            drop(load);
        }
        let w = Work {
            units: 5,
            at: Instant::now(),
        };
        assert_eq!(w.rate_to(w, 1), None);
        let later = Work {
            units: 5 + MIN_COUNTS * 10 - 1,
            at: w.at + Duration::from_secs(1),
        };
        assert_eq!(w.rate_to(later, 10), None, "fewer than MIN_COUNTS counts");
        let later = Work {
            units: later.units + 1,
            ..later
        };
        assert_eq!(w.rate_to(later, 10), Some((MIN_COUNTS * 10) as f64));
    }
}
