//! A `--concurrent` point on one rank: every call of the point (one per entry, each on this
//! rank's group of that entry) started at once as MPI-3 nonblocking collectives on their own
//! communicators, and each call's time taken when its request completes.
//!
//! Each timed iteration starts every call at one barrier of the world and waits on them with
//! `MPI_Waitany`, so every call's time is from the common start to its own completion (a
//! shorter call is not charged for a longer one). nccl-tests' loop keeps every call running
//! back to back: when one completes, the same call starts again until it has run the loop's
//! count, and its loop time is from the start to its last completion over that count.

use std::os::raw::c_int;
use std::time::Instant;

use mpi::ffi;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use super::call::{MpiBuffers, RawCall};
use super::raw::Handles;
use crate::error::{Error, Result};
use crate::model::plan::Point;

/// One call's measurement: its time of every timed iteration and of one loop call in
/// microseconds, and the wrong elements of its checked call.
pub type CallMeasured = (Vec<f64>, f64, u64);

/// A call of the point on this rank: its communicator and point, prepared.
struct Started<'a> {
    comm: &'a SimpleCommunicator,
    point: &'a Point,
    call: RawCall,
}

/// Warm-up, timed iterations, nccl-tests' loop and the exact check of `calls` at once, with
/// `start` (every rank of every call) leaving a barrier together before each; `bufs` holds at
/// least one buffer set per call.
pub fn measure_together(
    start: &SimpleCommunicator,
    calls: &[(&SimpleCommunicator, &Point)],
    bufs: &mut [MpiBuffers],
    h: &Handles,
) -> Result<Vec<CallMeasured>> {
    let started = (calls.iter())
        .map(|&(comm, point)| {
            let call = MpiBuffers::prepare(comm, point, h)?;
            Ok(Started { comm, point, call })
        })
        .collect::<Result<Vec<Started>>>()?;
    let Some(first) = started.first() else {
        return Ok(Vec::new());
    };
    let (iters, warmup, agg) = (
        first.point.iters,
        first.point.warmup,
        first.point.timing.agg.max(1),
    );
    fill(&started, bufs);
    let mut flight = Flight::new(started.len());
    for _ in 0..warmup {
        start.barrier();
        flight.run(&started, bufs, 1)?;
    }
    let mut times = vec![Vec::with_capacity(iters); started.len()];
    for _ in 0..iters {
        start.barrier();
        let done = flight.run(&started, bufs, agg)?;
        for (t, us) in times.iter_mut().zip(done) {
            t.push(us / agg as f64);
        }
    }
    let calls_in_loop = iters.max(1) * agg;
    start.barrier();
    let loops = flight.run(&started, bufs, calls_in_loop)?.to_vec();
    fill(&started, bufs);
    start.barrier();
    flight.run(&started, bufs, 1)?;
    let measured = (started.iter().zip(bufs.iter_mut()).zip(times).zip(loops))
        .map(|(((s, b), t), loop_us)| {
            let (size, rank) = (s.comm.size() as usize, s.comm.rank() as usize);
            let wrong = b.check(s.point, (size, rank), &s.call);
            (t, loop_us / calls_in_loop as f64, wrong)
        })
        .collect();
    Ok(measured)
}

/// Puts every call's exact input in its buffers.
fn fill(started: &[Started], bufs: &mut [MpiBuffers]) {
    for (s, b) in started.iter().zip(bufs.iter_mut()) {
        b.fill(s.point, s.comm.size() as usize, s.comm.rank() as usize);
    }
}

/// The requests in flight and what is left of each call, allocated once per point so that a
/// timed iteration does not allocate.
struct Flight {
    requests: Vec<ffi::MPI_Request>,
    left: Vec<usize>,
    done_us: Vec<f64>,
}

impl Flight {
    fn new(calls: usize) -> Flight {
        Flight {
            // SAFETY: reading the library's constant.
            requests: vec![unsafe { ffi::RSMPI_REQUEST_NULL }; calls],
            left: vec![0; calls],
            done_us: vec![0.0; calls],
        }
    }

    /// Runs every call `n` times back to back, all calls at once: each started, and started
    /// again as it completes until it has run `n` times. Each call's microseconds from the
    /// start to its last completion.
    fn run(&mut self, started: &[Started], bufs: &mut [MpiBuffers], n: usize) -> Result<&[f64]> {
        let began = Instant::now();
        for (i, s) in started.iter().enumerate() {
            self.left[i] = n;
            // SAFETY: each call has buffers of its own, untouched until its request completes
            // (below, before they are started again or checked).
            unsafe { bufs[i].start(&s.call, s.point, &mut self.requests[i])? };
        }
        let mut running = started.len();
        while running > 0 {
            let i = self.wait_any(started)?;
            self.left[i] -= 1;
            super::progress::progressed();
            if self.left[i] == 0 {
                self.done_us[i] = began.elapsed().as_nanos() as f64 / 1e3;
                running -= 1;
                continue;
            }
            let s = &started[i];
            // SAFETY: as above: call i's request has completed.
            unsafe { bufs[i].start(&s.call, s.point, &mut self.requests[i])? };
        }
        Ok(&self.done_us)
    }

    /// The index of a call whose request completed (`MPI_Waitany`).
    fn wait_any(&mut self, started: &[Started]) -> Result<usize> {
        let mut index: c_int = 0;
        let count = c_int::try_from(self.requests.len()).unwrap_or(c_int::MAX);
        // SAFETY: `requests` holds `count` requests (completed ones are MPI_REQUEST_NULL).
        let rc = unsafe {
            ffi::MPI_Waitany(
                count,
                self.requests.as_mut_ptr(),
                &mut index,
                ffi::RSMPI_STATUS_IGNORE,
            )
        };
        let found = usize::try_from(index).ok().filter(|&i| i < started.len());
        match (rc == ffi::MPI_SUCCESS as c_int, found) {
            (true, Some(i)) => Ok(i),
            _ => Err(Error::Rank(format!(
                "{}: waiting on the calls at once failed (MPI_Waitany error code {rc}, index \
                 {index})",
                started
                    .first()
                    .map_or(String::new(), |s| s.point.describe())
            ))),
        }
    }
}
