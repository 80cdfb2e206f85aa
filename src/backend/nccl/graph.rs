//! CUDA graphs for `--cuda-graph`: the calls of one point captured from the rank's stream into a
//! graph, instantiated once and launched per timed iteration. Part of the thin unsafe layer: our
//! own calls into the driver (cudarc's safe wrapper instantiates only with a non-zero flag and
//! has no upload), each result mapped to a typed error, the graph destroyed once without
//! panicking.
//!
//! Capture mode is `CU_STREAM_CAPTURE_MODE_GLOBAL`, as nccl-tests uses: NCCL supports stream
//! capture from 2.9 and is tested that way.

use std::ptr;

use cudarc::driver::sys;

use super::gpu::{driver_error, Gpu};
use crate::error::{Error, Result};

/// An instantiated graph of captured calls, launched on the stream it was captured from.
pub struct Graph {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    stream: sys::CUstream,
}

impl Graph {
    /// Captures what `body` enqueues on `gpu`'s stream, instantiates it and, with `upload`,
    /// uploads it to the device (so the first timed launch does not pay for the upload;
    /// nccl-tests' loop graph is not uploaded, its first launch pays). The capture is ended
    /// whatever `body` returns, or the stream would stay in capture mode.
    pub fn capture(gpu: &Gpu, upload: bool, body: impl FnOnce() -> Result<()>) -> Result<Graph> {
        gpu.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("cuCtxSetCurrent", e))?;
        let stream = gpu.stream.cu_stream();
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL;
        // SAFETY: `stream` is the rank's live stream, not capturing (every capture ends below).
        unsafe { sys::cuStreamBeginCapture_v2(stream, mode) }
            .result()
            .map_err(|e| driver_error("cuStreamBeginCapture", e))?;
        let captured = body();
        let mut graph: sys::CUgraph = ptr::null_mut();
        // SAFETY: ends the capture begun above on the same stream; writes one graph handle.
        let ended = unsafe { sys::cuStreamEndCapture(stream, &mut graph) }.result();
        let mut g = Graph {
            graph,
            exec: ptr::null_mut(),
            stream,
        };
        captured?;
        ended.map_err(|e| driver_error("cuStreamEndCapture", e))?;
        if g.graph.is_null() {
            return Err(Error::Rank("stream capture gave no graph".into()));
        }
        // SAFETY: `g.graph` is the graph just captured; flags 0 is the default instantiation.
        unsafe { sys::cuGraphInstantiateWithFlags(&mut g.exec, g.graph, 0) }
            .result()
            .map_err(|e| driver_error("cuGraphInstantiateWithFlags", e))?;
        if upload {
            // SAFETY: `g.exec` was instantiated above; the stream is live.
            unsafe { sys::cuGraphUpload(g.exec, g.stream) }
                .result()
                .map_err(|e| driver_error("cuGraphUpload", e))?;
        }
        Ok(g)
    }

    /// Enqueues one launch of the graph on its stream.
    pub fn launch(&self) -> Result<()> {
        // SAFETY: `exec` is a live instantiated graph (set by `capture`, freed only in Drop);
        // the buffers it uses outlive every point (allocated once for the sweep).
        unsafe { sys::cuGraphLaunch(self.exec, self.stream) }
            .result()
            .map_err(|e| driver_error("cuGraphLaunch", e))
    }
}

impl Drop for Graph {
    /// Destroys the executable graph and the graph, ignoring errors: a failing destroy has
    /// nothing left to clean up, and Drop must not panic.
    fn drop(&mut self) {
        if !self.exec.is_null() {
            // SAFETY: instantiated by `capture`, destroyed once here.
            let _ = unsafe { sys::cuGraphExecDestroy(self.exec) };
        }
        if !self.graph.is_null() {
            // SAFETY: captured by `capture`, destroyed once here.
            let _ = unsafe { sys::cuGraphDestroy(self.graph) };
        }
    }
}
