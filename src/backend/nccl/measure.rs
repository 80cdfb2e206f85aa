//! One point on one rank: where the call reads and writes (nccl-tests buffer semantics), the
//! warm-up and timed iterations with an event pair around each call on the rank's stream, and
//! the correctness check after timing, on exact inputs copied to the device and the output
//! copied back (the same patterns and checker as the host backend, see [`crate::check`]), in
//! pieces of at most [`super::placement::HOST_PIECE_BYTES`] so that a multi-GiB point needs no
//! multi-GiB host buffer per rank.
//! With `--cuda-graph` the call is captured into a CUDA graph after one plain call (which makes
//! NCCL connect its peers outside the capture), and every warm-up, timed and checked iteration
//! is one launch of that graph.

use std::os::raw::c_int;
use std::time::Duration;

use std::sync::Arc;

use cudarc::driver::CudaEvent;

use super::calls::Enqueue;
use super::comm::Communicator;
use super::gpu::{driver_error, wait_events, Gpu, Poll};
use super::graph::Graph;
use super::loader::Nccl;
use super::memory::DeviceMemory;
use super::p2p::{transfers, Transfer};
use super::placement::{
    count_wrong_pieces, fill_pieces, placement, Buf, PieceCopy, Placement, Region,
};
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
}

/// The group a rank measures in: its communicator and its index.
pub struct Member<'a> {
    pub comm: &'a Communicator,
    pub me: usize,
    pub size: usize,
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
}

/// How each iteration is enqueued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchMode {
    /// One NCCL call on the stream per iteration.
    Stream,
    /// One launch of a CUDA graph holding the captured call per iteration (`--cuda-graph`).
    Graph,
}

/// A point's call, ready to go once per iteration in the chosen mode.
struct Launcher<'a> {
    gpu: &'a Gpu,
    m: &'a Member<'a>,
    call: Enqueue,
    /// The point-to-point calls of an AllToAll, SendRecv, Gather or Scatter, listed once per
    /// point so that an iteration only issues them.
    list: Option<Vec<Transfer>>,
    graph: Option<Graph>,
}

impl<'a> Launcher<'a> {
    /// For graph mode: one plain call, then the capture.
    fn new(gpu: &'a Gpu, m: &'a Member<'a>, call: Enqueue, mode: LaunchMode) -> Result<Self> {
        let mut l = Launcher {
            gpu,
            m,
            call,
            // The op's own NCCL function where the library has it, else its list of transfers.
            list: match m.comm.nccl().native(call.op) {
                true => None,
                false => transfers(&call),
            },
            graph: None,
        };
        if mode == LaunchMode::Graph {
            l.go()?;
            let list = l.list.as_deref();
            l.graph = Some(Graph::capture(gpu, || launch(gpu, m, &call, list))?);
        }
        Ok(l)
    }

    fn go(&self) -> Result<()> {
        match &self.graph {
            Some(g) => g.launch(),
            None => launch(self.gpu, self.m, &self.call, self.list.as_deref()),
        }
    }
}

/// NCCL's estimate, then warm-up, timed iterations and correctness. Iterations are enqueued
/// back to back, as nccl-tests does; none waits for the host.
pub fn measure(
    gpu: &Gpu,
    bufs: &mut DeviceBuffers,
    m: &Member,
    p: &Point,
    (mode, stall): (LaunchMode, Duration),
    barrier: &mut dyn FnMut() -> Result<()>,
) -> Result<Measured> {
    let pl = placement(p, m.me);
    let call = enqueue_of(bufs, (p, m), &pl);
    let described = super::profiler::seen();
    let estimate_us = estimate(gpu, m, &call)?;
    fill(gpu, bufs, p, m, &pl, false)?;
    let launcher = Launcher::new(gpu, m, call, mode)?;
    for _ in 0..p.warmup {
        launcher.go()?;
    }
    let iters = p.iters.min(bufs.starts.len());
    for i in 0..iters {
        record(&bufs.starts[i], gpu)?;
        launcher.go()?;
        record(&bufs.ends[i], gpu)?;
    }
    let ends: Vec<&CudaEvent> = bufs.ends[..iters].iter().collect();
    wait_events(&ends, m.comm, stall, Poll::Sleeping)?;
    let mut times = Vec::with_capacity(iters);
    for i in 0..iters {
        let ms = bufs.starts[i]
            .elapsed_ms(&bufs.ends[i])
            .map_err(|e| driver_error("cuEventElapsedTime", e))?;
        times.push(f64::from(ms) * 1e3);
    }
    // NCCL describes a call when it is enqueued: by now the warm-up, the timed calls, or in
    // graph mode the plain call before the capture.
    let ran = super::profiler::last_since(described);
    barrier()?;
    let loop_us = time_loop(&launcher, &bufs.done, iters, stall)?;
    let wrong = check(bufs, p, &pl, &launcher, stall)?;
    Ok(Measured {
        times,
        wrong,
        estimate_us,
        loop_us,
        ran,
    })
}

/// nccl-tests' timing (`common.cu`, its default): after a barrier of every rank, `iters` calls
/// back to back with nothing between them, and the host's wall clock from the first enqueue to
/// the completion of the last, divided by the calls. Completion is polled without sleeping,
/// as nccl-tests' `testStreamSynchronize` does, so the time is not rounded up to a poll.
fn time_loop(launcher: &Launcher, done: &CudaEvent, iters: usize, stall: Duration) -> Result<f64> {
    let (gpu, m) = (launcher.gpu, launcher.m);
    let calls = iters.max(1);
    let start = std::time::Instant::now();
    for _ in 0..calls {
        launcher.go()?;
    }
    record(done, gpu)?;
    wait_events(&[done], m.comm, stall, Poll::Spinning)?;
    Ok(start.elapsed().as_secs_f64() * 1e6 / calls as f64)
}

/// The checked call: poison the output, put exact inputs in, call once (in the timed mode), copy
/// back and count.
fn check(
    bufs: &mut DeviceBuffers,
    p: &Point,
    pl: &Placement,
    launcher: &Launcher,
    stall: Duration,
) -> Result<u64> {
    let (gpu, m) = (launcher.gpu, launcher.m);
    fill(gpu, bufs, p, m, pl, true)?;
    launcher.go()?;
    record(&bufs.done, gpu)?;
    wait_events(&[&bufs.done], m.comm, stall, Poll::Sleeping)?;
    let mut device = OnDevice { gpu, bufs };
    count_wrong_pieces(&mut device, &p.call, (m.size, m.me), pl.check)
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

fn enqueue_of(bufs: &DeviceBuffers, (p, m): (&Point, &Member), pl: &Placement) -> Enqueue {
    let c = &p.call;
    Enqueue {
        op: c.op,
        dtype: c.dtype,
        redop: c.redop,
        send: bufs.address(pl.send),
        recv: bufs.address(pl.recv),
        count: c.shape.call_count(c.op),
        root: c_int::try_from(c.root).unwrap_or(c_int::MAX),
        rank: m.me,
        nranks: m.size,
    }
}

/// One call: the collective, or the group of `list`'s point-to-point calls.
fn launch(gpu: &Gpu, m: &Member, call: &Enqueue, list: Option<&[Transfer]>) -> Result<()> {
    let raw = m.comm.live().map_err(|e| Error::Rank(e.to_string()))?;
    let nccl = m.comm.nccl();
    // SAFETY: the addresses come from this rank's device buffers, sized by `buffer_sizes` for
    // every point of the sweep and alive as long as `bufs`, and `list` is `call`'s own
    // (`transfers`), inside them; the stream is the rank's own.
    unsafe {
        match list {
            Some(list) => nccl.group(raw, call, list, gpu.raw_stream()),
            None => nccl.enqueue(raw, call, gpu.raw_stream()),
        }
    }
    .map_err(|e| Error::Rank(e.to_string()))
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
