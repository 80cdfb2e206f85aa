//! One point on one rank: where the call reads and writes (nccl-tests buffer semantics), the
//! warm-up and timed iterations with an event pair around each call on the rank's stream, and
//! the correctness check after timing, on exact inputs copied to the device and the output
//! copied back (the same patterns and checker as the host backend, see [`crate::check`]), in
//! pieces of at most [`super::placement::HOST_PIECE_BYTES`] so that a multi-GiB point needs no
//! multi-GiB host buffer per rank.
//! With `--cuda-graph` the call is captured into a CUDA graph after one plain call (which makes
//! NCCL connect its peers outside the capture), and every warm-up, timed and checked iteration
//! is one launch of that graph; the back-to-back loop is one graph of all its iterations
//! launched `-G N` times, as nccl-tests times it.

use std::os::raw::c_int;
use std::time::Duration;

use std::sync::Arc;

use cudarc::driver::CudaEvent;

use super::enqueue::Enqueue;
pub use super::gemm::Beside;
use super::gemm::{Batch, GemmLoad};
use super::gpu::{driver_error, wait_events, Gpu, Poll};
use super::graph::Graph;
pub use super::launcher::{LaunchMode, Member};
use super::launcher::{Launcher, Rotation};
use super::loader::Nccl;
use super::memory::DeviceMemory;
use super::placement::{
    count_wrong_pieces, fill_pieces, placement, Buf, PieceCopy, Placement, Region,
};
use super::premul::ScaledSum;
use crate::collective::uneven::RankCounts;
use crate::collective::ReduceOp;
use crate::error::{Error, Result};
use crate::model::plan::Point;

/// The rank's device buffers and timing events, allocated once for the whole sweep.
pub struct DeviceBuffers {
    input: DeviceMemory,
    output: DeviceMemory,
    starts: Vec<CudaEvent>,
    ends: Vec<CudaEvent>,
    done: CudaEvent,
}

impl DeviceBuffers {
    /// Buffers for `(input, output)` bytes (from `ncclMemAlloc` where `nccl` has it, as
    /// nccl-tests) and event pairs for `iters` iterations.
    pub fn new(
        gpu: &Gpu,
        nccl: &Arc<Nccl>,
        (input, output): (usize, usize),
        iters: usize,
    ) -> Result<Self> {
        let events = || {
            (0..iters)
                .map(|_| gpu.timing_event())
                .collect::<Result<Vec<_>>>()
        };
        Ok(DeviceBuffers {
            input: DeviceMemory::alloc(gpu, nccl, input)?,
            output: DeviceMemory::alloc(gpu, nccl, output)?,
            starts: events()?,
            ends: events()?,
            done: gpu.timing_event()?,
        })
    }

    /// The device address and length of the input and of the output buffer, as registered
    /// with a communicator.
    pub fn regions(&self) -> [(u64, usize); 2] {
        [
            (self.input.address(), self.input.len()),
            (self.output.address(), self.output.len()),
        ]
    }

    fn buf(&self, b: Buf) -> &DeviceMemory {
        match b {
            Buf::Input => &self.input,
            Buf::Output => &self.output,
        }
    }

    fn address(&self, r: Region) -> u64 {
        self.buf(r.buf).address() + r.offset as u64
    }

    /// Where successive calls of `p` (placed as `pl`) go in these buffers.
    fn rotation(&self, p: &Point, pl: &Placement) -> Rotation {
        let input = if p.in_place { 0 } else { pl.send.len };
        Rotation::new(input, pl.output_len, (self.input.len(), self.output.len()))
    }
}

/// What one rank measured of one point.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// GPU time of every timed iteration between its two events, in microseconds.
    pub times: Vec<f64>,
    /// Wrong elements in this rank's output of the checked call.
    pub wrong: u64,
    /// NCCL's own estimate of one call, where the library offers one.
    pub estimate_us: Option<f64>,
    /// nccl-tests' time of one call on this rank ([`time_loop`]), in microseconds.
    pub loop_us: f64,
    /// The last collective NCCL described to its profiler during the point's plain calls.
    pub ran: Option<super::profiler::Ran>,
    /// A `--with-compute gemm` point's GEMM rate (flop/s) beside the timed calls and alone.
    pub compute: Option<(f64, f64)>,
}

/// How a sweep's points run: the launch mode, the calls per iteration (`--agg`), whether the
/// loop waits for each iteration (`--blocking`), and how long NCCL may make no progress before
/// the point fails (`--timeout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub mode: LaunchMode,
    pub agg: usize,
    pub blocking: bool,
    pub stall: Duration,
    /// Launches of the loop's graph in graph mode (nccl-tests `-G N`).
    pub graph_launches: usize,
}

/// NCCL's estimate, then warm-up, timed iterations and correctness. Iterations are enqueued
/// back to back, as nccl-tests does; none waits for the host.
pub fn measure(
    gpu: &Gpu,
    bufs: &mut DeviceBuffers,
    m: &Member,
    p: &Point,
    timing: Timing,
    barrier: &mut dyn FnMut() -> Result<()>,
    mut beside: Option<Beside>,
) -> Result<Measured> {
    // Sized first, while the rank's stream is idle: a GEMM timed beside the warm-up would
    // seem slower than it is alone.
    let gemms = match beside.as_mut() {
        Some(b) => {
            let batch = b.load.batch_for(gpu, b.target_us)?;
            Some((&*b.load, batch))
        }
        None => None,
    };
    let (pl, stall) = (placement(p, m.me), timing.stall);
    let scaled = scaled_sum(m, p)?;
    let call = Enqueue {
        made_redop: scaled.as_ref().map(ScaledSum::op),
        ..enqueue_of(bufs, (p, m), &pl)
    };
    let described = super::profiler::seen();
    let estimate_us = estimate(gpu, m, &call)?;
    fill(gpu, bufs, p, m, &pl, false)?;
    let rotation = bufs.rotation(p, &pl);
    let counts = p.rank_counts(m.me);
    let call = (call, counts.as_ref());
    let launcher = Launcher::new((gpu, m), call, (timing.mode, rotation, timing.agg))?;
    for k in 0..p.warmup {
        launcher.go(k)?;
    }
    let iters = p.iters.min(bufs.starts.len());
    if barriers_of(p) > 1 {
        // Groups at once start their timed calls together: every rank meets after its
        // warm-up is done (ranks outside the point meet here too, `sweep::nccl::rank`).
        record(&bufs.done, gpu)?;
        wait_events(&[&bufs.done], m.comm, stall, Poll::Sleeping)?;
        barrier()?;
    }
    for i in 0..iters {
        record(&bufs.starts[i], gpu)?;
        if let Some((load, _)) = gemms {
            load.mark(gpu)?;
        }
        launcher.go(p.warmup + i)?;
        record(&bufs.ends[i], gpu)?;
        if let Some((load, batch)) = gemms {
            load.beside(batch, Some(i))?;
            load.join(gpu)?;
        }
    }
    let ends: Vec<&CudaEvent> = bufs.ends[..iters].iter().collect();
    wait_events(&ends, m.comm, stall, Poll::Sleeping)?;
    // The last batch may outlast the last call: the joined stream waits for both.
    let gemms_during = match gemms {
        Some((load, _)) => {
            record(&bufs.done, gpu)?;
            wait_events(&[&bufs.done], m.comm, stall, Poll::Sleeping)?;
            Some(load.during_us(iters)?)
        }
        None => None,
    };
    let mut times = Vec::with_capacity(iters);
    for i in 0..iters {
        let ms = bufs.starts[i]
            .elapsed_ms(&bufs.ends[i])
            .map_err(|e| driver_error("cuEventElapsedTime", e))?;
        times.push(f64::from(ms) * 1e3 / launcher.agg() as f64);
    }
    // NCCL describes a call when it is enqueued: by now the warm-up, the timed calls, or in
    // graph mode the plain call before the capture.
    let ran = super::profiler::last_since(described);
    let first = p.warmup + iters;
    // Captured before the barrier, as nccl-tests instantiates before its own; -z 1 waits
    // after every iteration, which a graph of all of them cannot.
    let looped = match timing.blocking {
        false => launcher.loop_graph(first, iters)?,
        true => None,
    };
    barrier()?;
    let graph = looped.as_ref().map(|(g, held)| (g, *held));
    let loop_us = time_loop(
        &launcher,
        &bufs.done,
        (first, iters),
        graph,
        (timing, gemms),
    )?;
    drop(looped);
    let wrong = check(bufs, (p, counts.as_ref()), &pl, &launcher, stall)?;
    let compute = match (gemms, gemms_during) {
        (Some((load, batch)), Some(during)) => Some(load.rates(batch, during)?),
        _ => None,
    };
    Ok(Measured {
        times,
        wrong,
        estimate_us,
        loop_us,
        ran,
        compute,
    })
}

/// How often every rank meets at the store's barrier during point `p` (members inside
/// [`measure`], the others in its stead): before nccl-tests' loop, and for a split's groups also
/// before their timed calls.
pub fn barriers_of(p: &Point) -> usize {
    1 + usize::from(p.split.is_some())
}

/// nccl-tests' timing (`common.cu`, its default): after a barrier of every rank, `iters` calls
/// back to back with nothing between them, and the host's wall clock from the first enqueue to
/// the completion of the last, divided by the calls. Completion is polled without sleeping,
/// as nccl-tests' `testStreamSynchronize` does, so the time is not rounded up to a poll. With
/// `blocking` (nccl-tests `-z 1`) each iteration is waited for before the next is enqueued.
/// Under `-G N` (`looped`: the graph of `held` iterations) the loop is that graph launched N
/// times, every call it made counted.
fn time_loop(
    launcher: &Launcher,
    done: &CudaEvent,
    (first, iters): (usize, usize),
    looped: Option<(&Graph, usize)>,
    (timing, gemms): (Timing, Option<(&GemmLoad, Batch)>),
) -> Result<f64> {
    let (gpu, m, stall) = (launcher.gpu, launcher.m, timing.stall);
    let wait =
        || record(done, gpu).and_then(|()| wait_events(&[done], m.comm, stall, Poll::Spinning));
    let iters = iters.max(1);
    let start = std::time::Instant::now();
    let calls = match looped {
        Some((graph, held)) => {
            let launches = timing.graph_launches.max(1);
            for _ in 0..launches {
                graph.launch()?;
            }
            held * launches
        }
        None => {
            for k in first..first + iters {
                if let Some((load, _)) = gemms {
                    load.mark(gpu)?;
                }
                launcher.go(k)?;
                if let Some((load, batch)) = gemms {
                    // Each call's batch starts with it; the calls do not wait for the batches.
                    load.beside(batch, None)?;
                }
                if timing.blocking {
                    // nccl-tests -z 1: the host waits for each iteration before the next.
                    wait()?;
                }
            }
            iters
        }
    };
    wait()?;
    let calls = calls * launcher.agg();
    let loop_us = start.elapsed().as_secs_f64() * 1e6 / calls as f64;
    if let Some((load, _)) = gemms {
        load.join(gpu)?;
    }
    Ok(loop_us)
}

/// The checked call: poison the output, put exact inputs in, call once (in the timed mode), copy
/// back and count.
fn check(
    bufs: &mut DeviceBuffers,
    (p, uneven): (&Point, Option<&RankCounts>),
    pl: &Placement,
    launcher: &Launcher,
    stall: Duration,
) -> Result<u64> {
    let (gpu, m) = (launcher.gpu, launcher.m);
    fill(gpu, bufs, p, m, pl, true)?;
    launcher.checked()?;
    record(&bufs.done, gpu)?;
    wait_events(&[&bufs.done], m.comm, stall, Poll::Sleeping)?;
    let mut device = OnDevice { gpu, bufs };
    count_wrong_pieces(&mut device, (&p.call, uneven), (m.size, m.me), pl.check)
}

/// The rank's device buffers as [`PieceCopy`] memory.
struct OnDevice<'a> {
    gpu: &'a Gpu,
    bufs: &'a mut DeviceBuffers,
}

impl PieceCopy for OnDevice<'_> {
    fn copy_in(&mut self, r: Region, bytes: &[u8]) -> Result<()> {
        within(r, bytes.len())?;
        self.bufs.buf(r.buf).copy_in(self.gpu, r.offset, bytes)
    }

    fn copy_out(&mut self, r: Region, out: &mut [u8]) -> Result<()> {
        within(r, out.len())?;
        self.bufs.buf(r.buf).copy_out(self.gpu, r.offset, out)
    }
}

/// Refuses a copy of `n` bytes larger than its region.
fn within(r: Region, n: usize) -> Result<()> {
    if n > r.len {
        return Err(Error::Rank(format!(
            "a copy of {n} bytes does not fit its region of {} bytes",
            r.len
        )));
    }
    Ok(())
}

/// Copies the input pattern to the send region; with `poison`, first fills the whole output
/// with 0xff bytes (NaN, or -1 for i32), so that output the call does not write is wrong.
fn fill(
    gpu: &Gpu,
    bufs: &mut DeviceBuffers,
    p: &Point,
    m: &Member,
    pl: &Placement,
    poison: bool,
) -> Result<()> {
    if poison {
        bufs.output.set(gpu, (0, pl.output_len), 0xff)?;
    }
    let mut device = OnDevice { gpu, bufs };
    fill_pieces(&mut device, &p.call, (m.size, m.me), pl.fill)
}

/// The op of a mulsum point on this rank (kept until the point ends), `None` for the others.
fn scaled_sum<'a>(m: &'a Member, p: &Point) -> Result<Option<ScaledSum<'a>>> {
    let c = &p.call;
    if c.redop != ReduceOp::MulSum || !c.op.reduces() {
        return Ok(None);
    }
    let raw = m.comm.live().map_err(|e| Error::Rank(e.to_string()))?;
    ScaledSum::create(m.comm.nccl(), raw, c.dtype, m.me)
        .map(Some)
        .map_err(|e| Error::Rank(e.to_string()))
}

fn enqueue_of(bufs: &DeviceBuffers, (p, m): (&Point, &Member), pl: &Placement) -> Enqueue {
    let c = &p.call;
    Enqueue {
        op: c.op,
        dtype: c.dtype,
        redop: c.redop,
        made_redop: None,
        send: bufs.address(pl.send),
        recv: bufs.address(pl.recv),
        count: c.shape.call_count(c.op),
        root: c_int::try_from(c.root).unwrap_or(c_int::MAX),
        rank: m.me,
        nranks: m.size,
    }
}

fn estimate(gpu: &Gpu, m: &Member, call: &Enqueue) -> Result<Option<f64>> {
    let raw = m.comm.live().map_err(|e| Error::Rank(e.to_string()))?;
    // SAFETY: as in `launch`; the simulated call is planned, never launched.
    unsafe { m.comm.nccl().estimate(raw, call, gpu.raw_stream()) }
        .map_err(|e| Error::Rank(e.to_string()))
}

fn record(event: &CudaEvent, gpu: &Gpu) -> Result<()> {
    event
        .record(&gpu.stream)
        .map_err(|e| driver_error("cuEventRecord", e))
}
