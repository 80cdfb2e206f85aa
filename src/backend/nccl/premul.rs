//! nccl-tests' `mulsum`: a sum whose inputs NCCL first multiplies by a per-rank scalar, an op
//! each rank creates on its communicator with `ncclRedOpCreatePreMulSum` (NCCL 2.11+) and
//! destroys with `ncclRedOpDestroy`. The scalar is nccl-tests' (`ncclVerifiablePremulScalar`:
//! 1 on even ranks, 2 on odd ones), so the exact check knows the result
//! ([`crate::check::mulsum_scalar`]).

use std::os::raw::c_void;

use super::error::NcclError;
use super::lifecycle::RawComm;
use super::loader::Nccl;
use super::{map, sys};
use crate::check::{mulsum_scalar, write_value};
use crate::collective::DType;

/// A PreMulSum op of one communicator, destroyed on drop.
pub struct ScaledSum<'a> {
    nccl: &'a Nccl,
    comm: &'a RawComm,
    op: sys::ncclRedOp_t,
}

impl<'a> ScaledSum<'a> {
    /// The op of rank `rank` for elements of `dtype` on `comm`.
    pub fn create(
        nccl: &'a Nccl,
        comm: &'a RawComm,
        dtype: DType,
        rank: usize,
    ) -> Result<Self, NcclError> {
        let (Some(create), Some(_)) = (nccl.red_op_create_pre_mul_sum, nccl.red_op_destroy) else {
            return Err(NcclError::Missing {
                what: "--redop mulsum".into(),
                symbol: "ncclRedOpCreatePreMulSum",
                since: "2.11",
                library: nccl.path.display().to_string(),
            });
        };
        let mut scalar = scalar_bytes(dtype, rank);
        let mut op: sys::ncclRedOp_t = 0;
        // SAFETY: `op` is a valid place for the result; `scalar` holds a value of `dtype` at
        // its start (8 bytes, the widest type), which NCCL reads at once
        // (`ncclScalarHostImmediate`); the communicator is live (`RawComm`).
        let raw = unsafe {
            create(
                &mut op,
                scalar.as_mut_ptr().cast::<c_void>(),
                map::dtype(dtype),
                sys::NCCL_SCALAR_HOST_IMMEDIATE,
                comm.as_ptr(),
            )
        };
        nccl.check("ncclRedOpCreatePreMulSum", raw)?;
        Ok(ScaledSum { nccl, comm, op })
    }

    /// The op, to pass where a built-in `ncclRedOp_t` goes.
    pub fn op(&self) -> sys::ncclRedOp_t {
        self.op
    }
}

impl Drop for ScaledSum<'_> {
    fn drop(&mut self) {
        if let Some(destroy) = self.nccl.red_op_destroy {
            // SAFETY: `op` was created on this communicator, which outlives `self`, and is
            // destroyed once. A failure leaves one small op until the communicator goes: it is
            // not worth a panic in drop, and the next call would report a broken communicator.
            let _ = unsafe { destroy(self.op, self.comm.as_ptr()) };
        }
    }
}

/// Rank `rank`'s scalar as a value of `dtype` at the start of 8 bytes (native endian).
pub fn scalar_bytes(dtype: DType, rank: usize) -> [u8; 8] {
    let mut bytes = [0u8; 8];
    write_value(dtype, &mut bytes[..dtype.size()], 0, mulsum_scalar(rank));
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_are_one_on_even_ranks_and_two_on_odd_ones_in_each_type() {
        assert_eq!(scalar_bytes(DType::F32, 0), [0, 0, 0x80, 0x3F, 0, 0, 0, 0]);
        assert_eq!(scalar_bytes(DType::F32, 3), [0, 0, 0, 0x40, 0, 0, 0, 0]);
        assert_eq!(scalar_bytes(DType::U64, 5), [2, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(scalar_bytes(DType::F16, 1), [0, 0x40, 0, 0, 0, 0, 0, 0]);
        // e4m3 2.0 is 0 1000 000; e5m2 1.0 is 0 01111 00.
        assert_eq!(scalar_bytes(DType::F8E4M3, 1)[0], 0x40);
        assert_eq!(scalar_bytes(DType::F8E5M2, 2)[0], 0x3C);
    }
}
