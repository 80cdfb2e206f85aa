//! The GPU's compute load of `sweep --with-compute gemm`: square BF16 GEMMs (FP32
//! accumulation, cuBLAS' default algorithm) on a second stream of the rank's GPU, beside the
//! collective on the rank's own stream, as a training step overlaps its layers' GEMMs with
//! their gradients' ReduceScatter. The two compete for what they share on one GPU: streaming
//! multiprocessors (NCCL's kernels hold some of them for the whole call), HBM bandwidth, the L2
//! cache and the power budget.
//!
//! Sized to last about as long as the collective: a batch of `k` GEMMs of `n × n` matrices,
//! `n` the largest of [`SIZES`] whose GEMM alone takes no longer than one iteration of the
//! call alone (its median, measured just before), `k` as many as fill that time. Each timed
//! iteration forks the GEMM stream from the rank's stream, enqueues the batch there and the
//! call on the rank's stream, and joins them again: the call's events time the call beside the
//! batch, the GEMM stream's events time the batch beside the call. The batch alone is timed
//! after the point, on the same matrices.
//!
//! What it does not model: a real model's GEMM shapes (its hidden size, sequence and batch
//! set them), attention and elementwise kernels, and launches from several CPU threads.

use std::sync::Arc;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};

use super::cublas::{BlasHandle, Cublas, SquareGemm};
use super::gpu::{driver_error, Gpu};
use crate::error::{Error, Result};

/// The matrix orders tried, largest first: 8192 is a large model's hidden size (Llama-2 70B's),
/// 128 a GEMM small enough to be mostly its launch.
pub const SIZES: [usize; 7] = [8192, 4096, 2048, 1024, 512, 256, 128];
/// The most GEMMs one batch holds, however long the call.
pub const MAX_BATCH: usize = 1024;
/// GEMMs timed alone to calibrate an order (after [`WARM_GEMMS`] untimed).
const CALIBRATION_GEMMS: usize = 5;
const WARM_GEMMS: usize = 2;
/// Batches timed alone after a point, their median its time alone.
pub const ALONE_BATCHES: usize = 5;
/// Bytes of one BF16 element.
const BF16_BYTES: usize = 2;

/// cuBLAS for the load, its version read (no GPU needed): loaded once per rank before any
/// point, so that a rank without it fails at once with one line (a usage error, exit 2).
pub fn load_cublas() -> Result<Arc<Cublas>> {
    let usage = |e: String| Error::Usage(format!("--with-compute gemm: {e}"));
    let blas = Cublas::load().map_err(|e| usage(e.to_string()))?;
    blas.version().map_err(|e| usage(e.to_string()))?;
    Ok(blas)
}

/// The load beside one point's calls: the rank's [`GemmLoad`] and how long one iteration of
/// the call took alone (its median, from the point measured just before).
pub struct Beside<'a> {
    pub load: &'a mut GemmLoad,
    pub target_us: f64,
}

/// One iteration's GEMMs: `k` of order `n`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Batch {
    pub n: usize,
    pub k: usize,
}

impl Batch {
    /// Floating-point operations of the batch (2·n³ per GEMM).
    pub fn flops(&self) -> f64 {
        2.0 * (self.n as f64).powi(3) * self.k as f64
    }
}

/// The batch that lasts about `target_us`: the largest order whose GEMM alone (`alone_us(n)`,
/// asked largest first and no further than needed) fits the target, as many of them as fill it
/// (at least one, at most [`MAX_BATCH`]); one of the smallest order where even that is longer.
pub fn choose_batch(
    target_us: f64,
    mut alone_us: impl FnMut(usize) -> Result<f64>,
) -> Result<Batch> {
    let smallest = SIZES[SIZES.len() - 1];
    for n in SIZES {
        let us = alone_us(n)?;
        if us > 0.0 && us <= target_us {
            let k = (target_us / us).round().clamp(1.0, MAX_BATCH as f64) as usize;
            return Ok(Batch { n, k });
        }
    }
    Ok(Batch { n: smallest, k: 1 })
}

/// The GEMM stream, its handle and matrices, and its events; made once per rank.
pub struct GemmLoad {
    blas: BlasHandle,
    stream: Arc<CudaStream>,
    /// A, B and C of the largest order, back to back.
    matrices: CudaSlice<u8>,
    base: u64,
    fork: CudaEvent,
    join: CudaEvent,
    starts: Vec<CudaEvent>,
    ends: Vec<CudaEvent>,
    /// Each order's GEMM time alone, measured once when first asked.
    calibrated: Vec<(usize, f64)>,
}

impl GemmLoad {
    /// With cuBLAS ([`load_cublas`]), makes the second stream and the matrices (random BF16 values in [-1, 1):
    /// zeros would let the GPU draw less power than a real GEMM), and events for `iters`
    /// timed iterations.
    pub fn new(gpu: &Gpu, blas: Arc<Cublas>, iters: usize) -> Result<GemmLoad> {
        let stream = (gpu.ctx.new_stream()).map_err(|e| driver_error("cuStreamCreate", e))?;
        gpu.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("cuCtxSetCurrent", e))?;
        let handle = BlasHandle::create(blas, stream.clone())
            .map_err(|e| Error::Rank(format!("GPU {}: {e}", gpu.ordinal)))?;
        let order = SIZES[0];
        let matrices = gpu.alloc(3 * order * order * BF16_BYTES)?;
        let base = gpu.address(&matrices);
        fill_random(gpu, base, 2 * order * order)?;
        let event = || {
            gpu.ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(|e| driver_error("cuEventCreate", e))
        };
        // Enough pairs for the timed iterations and for the runs alone.
        let pairs = iters.max(ALONE_BATCHES).max(CALIBRATION_GEMMS);
        let timed = || {
            (0..pairs)
                .map(|_| gpu.timing_event())
                .collect::<Result<Vec<_>>>()
        };
        Ok(GemmLoad {
            blas: handle,
            stream,
            matrices,
            base,
            fork: event()?,
            join: event()?,
            starts: timed()?,
            ends: timed()?,
            calibrated: Vec::new(),
        })
    }

    /// The batch for a call whose iteration takes `target_us` alone.
    pub fn batch_for(&mut self, gpu: &Gpu, target_us: f64) -> Result<Batch> {
        choose_batch(target_us, |n| self.alone_us(gpu, n))
    }

    /// The fork point on `gpu`'s stream: recorded before the call is launched, so that the
    /// batch [`GemmLoad::beside`] enqueues after the call starts with it.
    pub fn mark(&self, gpu: &Gpu) -> Result<()> {
        self.fork.record(&gpu.stream).map_err(record_error)
    }

    /// Enqueues `batch` on the GEMM stream from the last [`GemmLoad::mark`], between the
    /// events of timed iteration `i` where given. Called after the call is launched: the
    /// call's own time never holds the host's launches of the GEMMs.
    pub fn beside(&self, batch: Batch, i: Option<usize>) -> Result<()> {
        (self.stream.wait(&self.fork)).map_err(|e| driver_error("cuStreamWaitEvent", e))?;
        if let Some(e) = i.and_then(|i| self.starts.get(i)) {
            e.record(&self.stream).map_err(record_error)?;
        }
        self.enqueue(batch, 1)?;
        if let Some(e) = i.and_then(|i| self.ends.get(i)) {
            e.record(&self.stream).map_err(record_error)?;
        }
        Ok(())
    }

    /// Makes `gpu`'s stream wait for the GEMM stream's work so far.
    pub fn join(&self, gpu: &Gpu) -> Result<()> {
        self.join.record(&self.stream).map_err(record_error)?;
        (gpu.stream.wait(&self.join)).map_err(|e| driver_error("cuStreamWaitEvent", e))
    }

    /// The batch's time beside the call in each of the first `iters` timed iterations, in
    /// microseconds (their events complete: the caller has waited for the joined stream).
    pub fn during_us(&self, iters: usize) -> Result<Vec<f64>> {
        (self.starts.iter().zip(&self.ends).take(iters))
            .map(|(s, e)| elapsed_us(s, e))
            .collect()
    }

    /// The median time of `batch` alone over [`ALONE_BATCHES`] batches, in microseconds.
    fn batch_alone_us(&self, batch: Batch) -> Result<f64> {
        self.timed_alone(batch, ALONE_BATCHES)
    }

    /// The GEMM rate (flop/s) beside the calls (the median batch of the timed iterations,
    /// `during_us`) and alone (the median of batches run after the point).
    pub fn rates(&self, batch: Batch, mut during_us: Vec<f64>) -> Result<(f64, f64)> {
        let alone_us = self.batch_alone_us(batch)?;
        let during_us = crate::stats::median_of(&mut during_us);
        Ok((
            batch.flops() / during_us * 1e6,
            batch.flops() / alone_us * 1e6,
        ))
    }

    fn alone_us(&mut self, gpu: &Gpu, n: usize) -> Result<f64> {
        if let Some(&(_, us)) = self.calibrated.iter().find(|(m, _)| *m == n) {
            return Ok(us);
        }
        gpu.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("cuCtxSetCurrent", e))?;
        self.enqueue(Batch { n, k: WARM_GEMMS }, 1)?;
        let us = self.timed_alone(Batch { n, k: 1 }, CALIBRATION_GEMMS)?;
        self.calibrated.push((n, us));
        Ok(us)
    }

    /// The median of `reps` runs of `batch` alone on the GEMM stream, each between two events.
    fn timed_alone(&self, batch: Batch, reps: usize) -> Result<f64> {
        let mut times = Vec::with_capacity(reps);
        for (s, e) in self.starts.iter().zip(&self.ends).take(reps.max(1)) {
            s.record(&self.stream).map_err(record_error)?;
            self.enqueue(batch, 1)?;
            e.record(&self.stream).map_err(record_error)?;
            e.synchronize()
                .map_err(|e| driver_error("cuEventSynchronize", e))?;
            times.push(elapsed_us(s, e)?);
        }
        Ok(crate::stats::median_of(&mut times))
    }

    fn enqueue(&self, batch: Batch, batches: usize) -> Result<()> {
        let g = self.gemm(batch.n);
        for _ in 0..batch.k * batches {
            self.blas.gemm(g).map_err(|e| Error::Rank(e.to_string()))?;
        }
        Ok(())
    }

    /// The GEMM of order `n` on the first `n²` elements of each matrix.
    fn gemm(&self, n: usize) -> SquareGemm {
        let order = SIZES[0];
        let stride = (order * order * BF16_BYTES) as u64;
        debug_assert!(self.matrices.len() as u64 >= 3 * stride);
        SquareGemm {
            n: n.min(order),
            a: self.base,
            b: self.base + stride,
            c: self.base + 2 * stride,
        }
    }
}

fn record_error(e: cudarc::driver::DriverError) -> Error {
    driver_error("cuEventRecord", e)
}

fn elapsed_us(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    let ms = start
        .elapsed_ms(end)
        .map_err(|e| driver_error("cuEventElapsedTime", e))?;
    Ok(f64::from(ms) * 1e3)
}

/// Puts `elements` pseudo-random BF16 values in [-1, 1) at `base`, 8 MiB at a time.
fn fill_random(gpu: &Gpu, base: u64, elements: usize) -> Result<()> {
    const PIECE: usize = 4 << 20;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut bytes = Vec::with_capacity(PIECE * BF16_BYTES);
    for start in (0..elements).step_by(PIECE) {
        bytes.clear();
        for _ in start..(start + PIECE).min(elements) {
            // xorshift64*: any fixed sequence will do; the values only keep the GEMM honest.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let unit = (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1 << 24) as f32;
            bytes.extend(half::bf16::from_f32(2.0 * unit - 1.0).to_le_bytes());
        }
        let at = base + (start * BF16_BYTES) as u64;
        // SAFETY: `at..at + bytes.len()` lies inside the matrices' allocation (elements are
        // within its first two thirds); pageable host memory is staged before the call returns.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(at, &bytes[..], gpu.stream.cu_stream())
        }
        .map_err(|e| driver_error("cuMemcpyHtoDAsync", e))?;
    }
    gpu.stream
        .synchronize()
        .map_err(|e| driver_error("cuStreamSynchronize", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GEMM of order n taking n³/1e9 µs·... : 8192 → 550 µs, 4096 → 68.7 µs, 2048 → 8.6 µs.
    fn cubic(n: usize) -> Result<f64> {
        Ok((n as f64).powi(3) / 1e9)
    }

    #[test]
    fn the_largest_order_that_fits_is_repeated_to_fill_the_call() {
        assert_eq!(
            choose_batch(1200.0, cubic).unwrap(),
            Batch { n: 8192, k: 2 }
        );
        // 100 µs: 8192 (550 µs) is too long, 4096 (68.7 µs) fits once (1.46 rounds to 1).
        assert_eq!(choose_batch(100.0, cubic).unwrap(), Batch { n: 4096, k: 1 });
        assert_eq!(choose_batch(30.0, cubic).unwrap(), Batch { n: 2048, k: 3 });
    }

    #[test]
    fn orders_are_asked_largest_first_and_no_further_than_needed() {
        let mut asked = Vec::new();
        choose_batch(100.0, |n| {
            asked.push(n);
            cubic(n)
        })
        .unwrap();
        assert_eq!(asked, vec![8192, 4096]);
    }

    #[test]
    fn a_call_shorter_than_the_smallest_gemm_gets_one_and_a_long_one_is_bounded() {
        let slow = |_: usize| Ok(50.0);
        assert_eq!(choose_batch(1.0, slow).unwrap(), Batch { n: 128, k: 1 });
        let fast = |_: usize| Ok(1.0);
        assert_eq!(
            choose_batch(1e9, fast).unwrap(),
            Batch {
                n: 8192,
                k: MAX_BATCH
            }
        );
        // A time of zero (an event pair that measured nothing) is never taken as a fit.
        let zero = |_: usize| Ok(0.0);
        assert_eq!(choose_batch(10.0, zero).unwrap(), Batch { n: 128, k: 1 });
        let failing = |_: usize| Err(Error::Rank("cublasGemmEx failed".into()));
        assert!(choose_batch(10.0, failing).is_err());
    }

    #[test]
    fn a_batch_counts_two_flops_per_multiply_add() {
        assert_eq!(Batch { n: 1024, k: 3 }.flops(), 3.0 * 2.0 * 1024f64.powi(3));
    }
}
