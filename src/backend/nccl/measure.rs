//! One point on one rank: where the call reads and writes (nccl-tests buffer semantics), the
//! warm-up and timed iterations with an event pair around each call on the rank's stream, and
//! the correctness check after timing, on exact inputs copied to the device and the output
//! copied back (the same patterns and checker as the host backend, see [`crate::check`]).

use std::time::Duration;

use cudarc::driver::{CudaEvent, CudaSlice, CudaViewMut};

use super::calls::{nccl_count, Enqueue};
use super::comm::Communicator;
use super::gpu::{driver_error, wait_events, Gpu};
use crate::check::{count_wrong, fill_input};
use crate::collective::Op;
use crate::error::{Error, Result};
use crate::sweep::plan::Point;

/// Which device buffer a region lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    Input,
    Output,
}

/// A byte range of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub buf: Buf,
    pub offset: usize,
    pub len: usize,
}

/// Where one rank's call of a point reads, writes, is filled and is checked. In place follows
/// nccl-tests and nccl.h: AllGather sends from its own block of the output
/// (`recv + rank × sendcount`), ReduceScatter receives into its own block of the input
/// (`send + rank × recvcount`), the other ops use one buffer for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub send: Region,
    pub recv: Region,
    /// Where the input pattern goes (the send region).
    pub fill: Region,
    /// What the checker reads (the receive region).
    pub check: Region,
    /// The whole output buffer the point uses, poisoned before the checked call.
    pub output_len: usize,
}

/// The placement of `p` for the rank at index `me` of its group.
pub fn placement(p: &Point, me: usize) -> Placement {
    let s = &p.call.shape;
    let region = |buf, offset, len| Region { buf, offset, len };
    let (send, recv) = match (p.in_place, p.call.op) {
        (false, _) => (
            region(Buf::Input, 0, s.in_bytes),
            region(Buf::Output, 0, s.out_bytes),
        ),
        (true, Op::AllGather) => (
            region(Buf::Output, me * s.in_bytes, s.in_bytes),
            region(Buf::Output, 0, s.out_bytes),
        ),
        (true, Op::ReduceScatter) => (
            region(Buf::Output, 0, s.in_bytes),
            region(Buf::Output, me * s.out_bytes, s.out_bytes),
        ),
        (true, _) => (
            region(Buf::Output, 0, s.in_bytes),
            region(Buf::Output, 0, s.out_bytes),
        ),
    };
    let output_len = if p.in_place {
        s.in_bytes.max(s.out_bytes)
    } else {
        s.out_bytes
    };
    Placement {
        send,
        recv,
        fill: send,
        check: recv,
        output_len,
    }
}

/// The largest input and output buffers any of `points` needs.
pub fn buffer_sizes<'a>(points: impl Iterator<Item = &'a Point>) -> (usize, usize) {
    points.fold((0, 0), |(i, o), p| {
        let pl = placement(p, 0);
        let input = if p.in_place { 0 } else { p.call.shape.in_bytes };
        (i.max(input), o.max(pl.output_len))
    })
}

/// The rank's device buffers and timing events, allocated once for the whole sweep.
pub struct DeviceBuffers {
    input: CudaSlice<u8>,
    output: CudaSlice<u8>,
    starts: Vec<CudaEvent>,
    ends: Vec<CudaEvent>,
    done: CudaEvent,
}

impl DeviceBuffers {
    /// Buffers for `(input, output)` bytes and event pairs for `iters` iterations.
    pub fn new(gpu: &Gpu, (input, output): (usize, usize), iters: usize) -> Result<Self> {
        let events = || {
            (0..iters)
                .map(|_| gpu.timing_event())
                .collect::<Result<Vec<_>>>()
        };
        Ok(DeviceBuffers {
            input: gpu.alloc(input)?,
            output: gpu.alloc(output)?,
            starts: events()?,
            ends: events()?,
            done: gpu.timing_event()?,
        })
    }

    fn view(&mut self, r: Region) -> CudaViewMut<'_, u8> {
        let buf = match r.buf {
            Buf::Input => &mut self.input,
            Buf::Output => &mut self.output,
        };
        buf.slice_mut(r.offset..r.offset + r.len)
    }

    fn address(&self, gpu: &Gpu, r: Region) -> u64 {
        let base = match r.buf {
            Buf::Input => gpu.address(&self.input),
            Buf::Output => gpu.address(&self.output),
        };
        base + r.offset as u64
    }

    fn copy_in(&mut self, gpu: &Gpu, r: Region, bytes: &[u8]) -> Result<()> {
        let mut view = self.view(r);
        gpu.stream
            .memcpy_htod(bytes, &mut view)
            .map_err(|e| driver_error("cuMemcpyHtoDAsync", e))
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
}

/// NCCL's estimate, then warm-up, timed iterations and correctness. Iterations are enqueued
/// back to back, as nccl-tests does; none waits for the host.
pub fn measure(
    gpu: &Gpu,
    bufs: &mut DeviceBuffers,
    m: &Member,
    p: &Point,
    stall: Duration,
) -> Result<Measured> {
    let pl = placement(p, m.me);
    let call = enqueue_of(gpu, bufs, p, &pl);
    let estimate_us = estimate(gpu, m, &call)?;
    fill(gpu, bufs, p, m, &pl, false)?;
    for _ in 0..p.warmup {
        launch(gpu, m, &call)?;
    }
    let iters = p.iters.min(bufs.starts.len());
    for i in 0..iters {
        record(&bufs.starts[i], gpu)?;
        launch(gpu, m, &call)?;
        record(&bufs.ends[i], gpu)?;
    }
    let ends: Vec<&CudaEvent> = bufs.ends[..iters].iter().collect();
    wait_events(&ends, m.comm, stall)?;
    let mut times = Vec::with_capacity(iters);
    for i in 0..iters {
        let ms = bufs.starts[i]
            .elapsed_ms(&bufs.ends[i])
            .map_err(|e| driver_error("cuEventElapsedTime", e))?;
        times.push(f64::from(ms) * 1e3);
    }
    let wrong = check(gpu, bufs, p, m, &pl, &call, stall)?;
    Ok(Measured {
        times,
        wrong,
        estimate_us,
    })
}

/// The checked call: poison the output, put exact inputs in, call once, copy back and count.
fn check(
    gpu: &Gpu,
    bufs: &mut DeviceBuffers,
    p: &Point,
    m: &Member,
    pl: &Placement,
    call: &Enqueue,
    stall: Duration,
) -> Result<u64> {
    fill(gpu, bufs, p, m, pl, true)?;
    launch(gpu, m, call)?;
    record(&bufs.done, gpu)?;
    wait_events(&[&bufs.done], m.comm, stall)?;
    let mut out = vec![0u8; pl.check.len];
    let view = bufs.view(pl.check);
    gpu.stream
        .memcpy_dtoh(&view, &mut out)
        .map_err(|e| driver_error("cuMemcpyDtoHAsync", e))?;
    gpu.stream
        .synchronize()
        .map_err(|e| driver_error("cuStreamSynchronize", e))?;
    let c = &p.call;
    Ok(count_wrong(
        c.op, c.dtype, c.redop, m.size, m.me, &c.shape, &out,
    ))
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
        let base = gpu.address(&bufs.output);
        // SAFETY: the output buffer holds at least `output_len` bytes (`buffer_sizes`) and is
        // used on this stream only.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                base,
                0xff,
                pl.output_len,
                gpu.stream.cu_stream(),
            )
        }
        .map_err(|e| driver_error("cuMemsetD8Async", e))?;
    }
    let mut host = vec![0u8; pl.fill.len];
    fill_input(p.call.op, p.call.dtype, m.size, m.me, &mut host);
    bufs.copy_in(gpu, pl.fill, &host)
}

fn enqueue_of(gpu: &Gpu, bufs: &DeviceBuffers, p: &Point, pl: &Placement) -> Enqueue {
    let c = &p.call;
    Enqueue {
        op: c.op,
        dtype: c.dtype,
        redop: c.redop,
        send: bufs.address(gpu, pl.send),
        recv: bufs.address(gpu, pl.recv),
        count: nccl_count(c.op, &c.shape),
        root: 0,
    }
}

fn launch(gpu: &Gpu, m: &Member, call: &Enqueue) -> Result<()> {
    let raw = m.comm.live().map_err(|e| Error::Rank(e.to_string()))?;
    // SAFETY: the addresses come from this rank's device buffers, sized by `buffer_sizes` for
    // every point of the sweep and alive as long as `bufs`; the stream is the rank's own.
    unsafe { m.comm.nccl().enqueue(raw, call, gpu.raw_stream()) }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Call;
    use crate::collective::{Algo, DType, ReduceOp, Shape};

    fn point(op: Op, in_place: bool) -> Point {
        let shape = Shape::new(op, DType::F32, 1024, 4);
        let call = Call {
            op,
            algo: Algo::Auto,
            dtype: DType::F32,
            redop: ReduceOp::Sum,
            shape,
        };
        Point {
            call,
            world: 4,
            nodes: 1,
            pair: None,
            in_place,
            requested: 1024,
            iters: 1,
            warmup: 0,
        }
    }

    fn r(buf: Buf, offset: usize, len: usize) -> Region {
        Region { buf, offset, len }
    }

    #[test]
    fn out_of_place_reads_input_and_writes_output() {
        let pl = placement(&point(Op::AllGather, false), 2);
        assert_eq!(pl.send, r(Buf::Input, 0, 256));
        assert_eq!(pl.recv, r(Buf::Output, 0, 1024));
        let pl = placement(&point(Op::ReduceScatter, false), 2);
        assert_eq!(
            (pl.send, pl.recv),
            (r(Buf::Input, 0, 1024), r(Buf::Output, 0, 256))
        );
    }

    #[test]
    fn in_place_follows_nccl_tests_offsets() {
        // AllGather: send = recv + rank * sendcount.
        let pl = placement(&point(Op::AllGather, true), 3);
        assert_eq!(pl.send, r(Buf::Output, 768, 256));
        assert_eq!(pl.recv, r(Buf::Output, 0, 1024));
        assert_eq!((pl.fill, pl.check), (pl.send, pl.recv));
        // ReduceScatter: recv = send + rank * recvcount.
        let pl = placement(&point(Op::ReduceScatter, true), 1);
        assert_eq!(pl.send, r(Buf::Output, 0, 1024));
        assert_eq!(pl.recv, r(Buf::Output, 256, 256));
        for op in [Op::AllReduce, Op::Broadcast, Op::Reduce] {
            let pl = placement(&point(op, true), 2);
            assert_eq!(
                (pl.send, pl.recv),
                (r(Buf::Output, 0, 1024), r(Buf::Output, 0, 1024))
            );
            assert_eq!(pl.output_len, 1024);
        }
    }

    #[test]
    fn buffers_cover_the_largest_point_of_each_placement() {
        let points = [point(Op::AllGather, false), point(Op::ReduceScatter, true)];
        // Out-of-place allgather: 256 in, 1024 out; in-place reducescatter: 1024 in one buffer.
        assert_eq!(buffer_sizes(points.iter()), (256, 1024));
        assert_eq!(buffer_sizes([point(Op::AllReduce, true)].iter()), (0, 1024));
    }
}
