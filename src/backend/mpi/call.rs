//! One collective call through rsmpi on host buffers, and the exact-input fill and check around
//! it (the same patterns as the host backend, see [`crate::check`]).

use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

use crate::check::{count_wrong, fill_input};
use crate::collective::{DType, Op, ReduceOp};
use crate::error::{Error, Result};
use crate::sweep::plan::Point;

/// 8-byte aligned input and output, grown once to the largest point so timed loops never
/// allocate.
#[derive(Default)]
pub(super) struct MpiBuffers {
    input: Vec<u64>,
    output: Vec<u64>,
}

fn grow(v: &mut Vec<u64>, bytes: usize) {
    let words = bytes.div_ceil(8);
    if v.len() < words {
        v.resize(words, 0);
    }
}

impl MpiBuffers {
    /// Input and output bytes sized for `p` (out of place only).
    fn views(&mut self, p: &Point) -> (&mut [u8], &mut [u8]) {
        let s = &p.call.shape;
        grow(&mut self.input, s.in_bytes);
        grow(&mut self.output, s.out_bytes);
        let input: &mut [u8] = bytemuck::cast_slice_mut(&mut self.input[..]);
        let output: &mut [u8] = bytemuck::cast_slice_mut(&mut self.output[..]);
        (&mut input[..s.in_bytes], &mut output[..s.out_bytes])
    }

    /// Puts the known input pattern in the input buffer and clears the output.
    pub(super) fn fill(&mut self, p: &Point, size: usize, rank: usize) {
        let (input, output) = self.views(p);
        fill_input(p.call.op, p.call.dtype, size, rank, input);
        output.fill(0);
    }

    /// Counts the wrong elements of this rank's output.
    pub(super) fn check(&mut self, p: &Point, size: usize, rank: usize) -> u64 {
        let c = &p.call;
        let (_, output) = self.views(p);
        count_wrong(c.op, c.dtype, c.redop, size, rank, &c.shape, output)
    }

    /// Runs the point's collective once on `comm`.
    pub(super) fn call(&mut self, comm: &SimpleCommunicator, p: &Point) -> Result<()> {
        let (op, redop) = (p.call.op, p.call.redop);
        let (input, output) = self.views(p);
        match p.call.dtype {
            DType::F32 => typed::<f32>(comm, op, redop, input, output),
            DType::F64 => typed::<f64>(comm, op, redop, input, output),
            DType::I32 => typed::<i32>(comm, op, redop, input, output),
            d @ (DType::F16 | DType::BF16) => return Err(unsupported_dtype(d)),
        }
        Ok(())
    }
}

/// The refusal of a dtype MPI has no type and reduction for.
pub(super) fn unsupported_dtype(d: DType) -> Error {
    Error::usage(format!(
        "--dtype {d}: the mpi backend measures f32, f64 and i32 (MPI has no {d} type); \
         drop {d} or use --backend host"
    ))
}

fn system_op(redop: ReduceOp) -> SystemOperation {
    match redop {
        ReduceOp::Sum => SystemOperation::sum(),
        ReduceOp::Max => SystemOperation::max(),
        ReduceOp::Min => SystemOperation::min(),
    }
}

/// The call on buffers of element type `T` (the byte buffers are 8-byte aligned and hold whole
/// elements, so the casts cannot fail).
fn typed<T>(comm: &SimpleCommunicator, op: Op, redop: ReduceOp, input: &[u8], output: &mut [u8])
where
    T: Equivalence + bytemuck::Pod,
{
    let send: &[T] = bytemuck::cast_slice(input);
    let recv: &mut [T] = bytemuck::cast_slice_mut(output);
    let root = comm.process_at_rank(0);
    let is_root = comm.rank() == 0;
    match op {
        Op::AllReduce => comm.all_reduce_into(send, recv, system_op(redop)),
        Op::AllGather => comm.all_gather_into(send, recv),
        Op::ReduceScatter => comm.reduce_scatter_block_into(send, recv, system_op(redop)),
        Op::Broadcast => {
            // Out of place: the root's input becomes its output, then the root sends it.
            if is_root {
                recv.copy_from_slice(send);
            }
            root.broadcast_into(recv);
        }
        Op::Reduce if is_root => root.reduce_into_root(send, recv, system_op(redop)),
        Op::Reduce => root.reduce_into(send, system_op(redop)),
    }
}
