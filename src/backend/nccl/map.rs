//! collbench's element types and reductions as NCCL enum values.

use super::sys;
use crate::collective::{DType, ReduceOp};

/// The `ncclDataType_t` of an element type.
pub fn dtype(d: DType) -> sys::ncclDataType_t {
    match d {
        DType::F32 => sys::NCCL_FLOAT32,
        DType::F64 => sys::NCCL_FLOAT64,
        DType::F16 => sys::NCCL_FLOAT16,
        DType::BF16 => sys::NCCL_BFLOAT16,
        DType::I32 => sys::NCCL_INT32,
    }
}

/// The `ncclRedOp_t` of a reduction.
pub fn redop(op: ReduceOp) -> sys::ncclRedOp_t {
    match op {
        ReduceOp::Sum => sys::NCCL_SUM,
        ReduceOp::Max => sys::NCCL_MAX,
        ReduceOp::Min => sys::NCCL_MIN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_match_nccl_h() {
        // ncclInt32 = 2, ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9.
        let want = [
            (DType::F32, 7),
            (DType::F64, 8),
            (DType::F16, 6),
            (DType::BF16, 9),
            (DType::I32, 2),
        ];
        for (d, raw) in want {
            assert_eq!(dtype(d), raw, "{d}");
        }
        assert_eq!(
            DType::ALL.len(),
            want.len(),
            "a new DType needs an NCCL mapping"
        );
    }

    #[test]
    fn reductions_match_nccl_h() {
        // ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3.
        assert_eq!(redop(ReduceOp::Sum), 0);
        assert_eq!(redop(ReduceOp::Max), 2);
        assert_eq!(redop(ReduceOp::Min), 3);
        assert_eq!(
            ReduceOp::ALL.len(),
            3,
            "a new ReduceOp needs an NCCL mapping"
        );
    }
}
