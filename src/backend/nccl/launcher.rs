//! How one iteration of a point is enqueued, as nccl-tests 2.19.6 does it (`startColl` and
//! `BenchTime` in src/common.cu):
//! - **Rotation.** Call `k` of a point reads and writes `footprint × (k mod steps)` bytes
//!   further into both buffers, `steps` being how many whole copies of the point's footprint the
//!   buffers hold, so that consecutive calls do not find their data in the GPU's cache (nccl-tests:
//!   "avoid cache effects"). The checked call is at offset 0.
//! - **Aggregation** (`--agg N`, nccl-tests `-m N`): an iteration is N calls between
//!   `ncclGroupStart` and `ncclGroupEnd`, launched together; its time is divided by N.
//! - **Mode.** On the stream, or (`--cuda-graph`) one launch of a CUDA graph that captured one
//!   iteration after one plain call (which connects NCCL's peers outside the capture). A graph
//!   holds fixed addresses: its iterations rotate only among its N aggregated calls. The
//!   back-to-back loop in graph mode is nccl-tests' `-G N` instead: every loop iteration, each
//!   at its own rotation, captured into one graph launched N times.

use super::comm::Communicator;
use super::enqueue::Enqueue;
use super::gpu::Gpu;
use super::graph::Graph;
use super::p2p::{transfers, uneven_transfers, Transfer};
use crate::collective::uneven::RankCounts;
use crate::error::{Error, Result};

/// The most calls the loop's graph captures (iterations × `--agg`): a bound on the graph's
/// size where nccl-tests captures every iteration whatever their number.
pub const MAX_LOOP_GRAPH_CALLS: usize = 65_536;

/// How each iteration is enqueued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchMode {
    /// NCCL calls on the stream.
    Stream,
    /// One launch of a CUDA graph holding the captured iteration (`--cuda-graph`).
    Graph,
}

/// The offsets successive calls of a point take in its buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rotation {
    /// Bytes between two positions: the larger of the point's spans in its two buffers.
    pub footprint: usize,
    /// Positions the buffers hold (at least 1).
    pub steps: usize,
}

impl Rotation {
    /// The rotation of a point that spans `input` bytes of the input buffer (0 in place: it uses
    /// the output buffer only) and `output` bytes of the output buffer, in buffers of
    /// `buffers` (input, output) bytes.
    pub fn new(input: usize, output: usize, buffers: (usize, usize)) -> Rotation {
        let footprint = input.max(output);
        if footprint == 0 {
            return Rotation {
                footprint,
                steps: 1,
            };
        }
        let fits = |used: usize, len: usize| {
            if used == 0 {
                usize::MAX
            } else {
                len / footprint
            }
        };
        let steps = fits(input, buffers.0).min(fits(output, buffers.1)).max(1);
        Rotation { footprint, steps }
    }

    /// The byte offset of call `k`.
    pub fn shift(&self, k: usize) -> usize {
        self.footprint * (k % self.steps)
    }
}

/// The group a rank measures in: its communicator and its index.
pub struct Member<'a> {
    pub comm: &'a Communicator,
    pub me: usize,
    pub size: usize,
}

/// A point's call, ready to go once per iteration in the chosen mode.
pub struct Launcher<'a> {
    pub gpu: &'a Gpu,
    pub m: &'a Member<'a>,
    call: Enqueue,
    /// The point-to-point calls of an AllToAll(V), SendRecv, Gather or Scatter (offsets from
    /// the call's buffers), listed once per point so that an iteration only issues them.
    list: Option<Vec<Transfer>>,
    rotation: Rotation,
    /// Calls per iteration (`--agg`).
    agg: usize,
    graph: Option<Graph>,
}

impl<'a> Launcher<'a> {
    /// For graph mode: one plain call, then the capture of iteration 0.
    /// `uneven`: the rank's counts of an AllToAllV.
    pub fn new(
        (gpu, m): (&'a Gpu, &'a Member<'a>),
        (call, uneven): (Enqueue, Option<&RankCounts>),
        (mode, rotation, agg): (LaunchMode, Rotation, usize),
    ) -> Result<Self> {
        // The op's own NCCL function where the library has it, else its list of transfers.
        let list = match (uneven, m.comm.nccl().native(call.op)) {
            (Some(counts), _) => Some(uneven_transfers(counts, call.dtype.size())),
            (None, true) => None,
            (None, false) => transfers(&call),
        };
        let mut l = Launcher {
            gpu,
            m,
            call,
            list,
            rotation,
            agg: agg.max(1),
            graph: None,
        };
        if mode == LaunchMode::Graph {
            l.one(0)?;
            let graph = Graph::capture(gpu, true, || l.iteration(0))?;
            l.graph = Some(graph);
        }
        Ok(l)
    }

    /// Calls per iteration.
    pub fn agg(&self) -> usize {
        self.agg
    }

    /// Enqueues iteration `k`: its calls (calls `k·agg` to `k·agg + agg − 1`), or one launch
    /// of the graph.
    pub fn go(&self, k: usize) -> Result<()> {
        match &self.graph {
            Some(g) => g.launch(),
            None => self.iteration(k),
        }
    }

    /// In graph mode, nccl-tests' loop graph (`-G`): iterations `first..first + iters`, each at
    /// its rotation, captured into one graph, at most [`MAX_LOOP_GRAPH_CALLS`] calls (the
    /// iterations it holds are the graph's second field). `None` on the stream.
    pub fn loop_graph(&self, first: usize, iters: usize) -> Result<Option<(Graph, usize)>> {
        if self.graph.is_none() {
            return Ok(None);
        }
        let held = iters.clamp(1, (MAX_LOOP_GRAPH_CALLS / self.agg).max(1));
        let graph = Graph::capture(self.gpu, false, || {
            (first..first + held).try_for_each(|k| self.iteration(k))
        })?;
        Ok(Some((graph, held)))
    }

    /// The checked call: one call at offset 0, the graph's launch where the graph is that call.
    pub fn checked(&self) -> Result<()> {
        match (&self.graph, self.agg) {
            (Some(g), 1) => g.launch(),
            _ => self.one(0),
        }
    }

    fn iteration(&self, k: usize) -> Result<()> {
        if self.agg == 1 {
            return self.one(k);
        }
        let first = k.wrapping_mul(self.agg);
        let nccl = self.m.comm.nccl();
        let mut failed = None;
        let grouped = nccl.grouped(|| {
            for a in 0..self.agg {
                if let Err(e) = self.one(first.wrapping_add(a)) {
                    failed = Some(e);
                    break;
                }
            }
        });
        match (failed, grouped) {
            (Some(e), _) => Err(e),
            (None, r) => r.map_err(|e| Error::Rank(e.to_string())),
        }
    }

    /// Call `k` on the stream, at its rotation's offset.
    fn one(&self, k: usize) -> Result<()> {
        let shift = self.rotation.shift(k) as u64;
        let call = Enqueue {
            send: self.call.send + shift,
            recv: self.call.recv + shift,
            ..self.call
        };
        let raw = self.m.comm.live().map_err(|e| Error::Rank(e.to_string()))?;
        let nccl = self.m.comm.nccl();
        // SAFETY: the addresses come from this rank's device buffers, sized by `buffer_sizes`
        // for every point of the sweep and alive as long as them; the shift keeps the point's
        // footprint inside both (`Rotation::new` from their lengths); `list` is the call's own
        // (`transfers`), inside its footprint; the stream is the rank's own.
        unsafe {
            match self.list.as_deref() {
                Some(list) => nccl.group(raw, &call, list, self.gpu.raw_stream()),
                None => nccl.enqueue(raw, &call, self.gpu.raw_stream()),
            }
        }
        .map_err(|e| Error::Rank(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_rotate_through_as_many_footprints_as_both_buffers_hold() {
        // 1 KiB out of place in 16 KiB buffers: 16 positions.
        let r = Rotation::new(1024, 1024, (16 << 10, 16 << 10));
        assert_eq!(r.steps, 16);
        assert_eq!(
            (r.shift(0), r.shift(1), r.shift(15), r.shift(16)),
            (0, 1024, 15 << 10, 0)
        );
        // AllGather out of place at 4 ranks: 256 B in, 1 KiB out; the larger span steps.
        let r = Rotation::new(256, 1024, (4096, 4096));
        assert_eq!((r.footprint, r.steps), (1024, 4));
        // The smaller buffer bounds it; in place (no input span) the output alone does.
        assert_eq!(Rotation::new(1024, 1024, (2048, 1 << 20)).steps, 2);
        assert_eq!(Rotation::new(0, 1024, (0, 8192)).steps, 8);
        // The largest point of the sweep, and an empty one, never move.
        let r = Rotation::new(4096, 4096, (4096, 4096));
        assert_eq!((r.steps, r.shift(7)), (1, 0));
        assert_eq!(Rotation::new(0, 0, (0, 1)).shift(3), 0);
        // Every position keeps the footprint inside the buffers.
        for (i, o, b) in [(8, 24, (4096, 100)), (3, 5, (7, 11)), (0, 40, (0, 4000))] {
            let r = Rotation::new(i, o, b);
            for k in 0..3 * r.steps {
                assert!(i == 0 || r.shift(k) + i <= b.0, "{i} {b:?} {k}");
                assert!(r.shift(k) + o <= b.1, "{o} {b:?} {k}");
            }
        }
    }
}
