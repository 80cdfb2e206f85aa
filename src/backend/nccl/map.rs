//! collbench's element types and reductions as NCCL enum values.

use super::loader::Version;
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

/// The NCCL release whose `ncclDataType_t` first has `d`: bfloat16 came in 2.10.3 (NCCL release
/// notes), the others are in every NCCL 2.
pub fn dtype_since(d: DType) -> Version {
    let v = |minor, patch| Version {
        major: 2,
        minor,
        patch,
    };
    match d {
        DType::BF16 => v(10, 3),
        DType::F32 | DType::F64 | DType::F16 | DType::I32 => v(0, 0),
    }
}

/// Refuses `d` on a library older than the release that has it, naming both.
pub fn check_dtype(d: DType, library: Version) -> Result<(), String> {
    let since = dtype_since(d);
    let key = |v: Version| (v.major, v.minor, v.patch);
    if key(library) < key(since) {
        return Err(format!(
            "--dtype {d} needs NCCL {since} or later; this library is NCCL {library}: point \
             COLLBENCH_NCCL_LIB at a newer libnccl.so.2 or drop {d}"
        ));
    }
    Ok(())
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
    fn bf16_is_refused_before_2_10_3_and_the_rest_run_everywhere() {
        let v = |minor, patch| Version {
            major: 2,
            minor,
            patch,
        };
        let e = check_dtype(DType::BF16, v(10, 2)).unwrap_err();
        assert!(
            e.starts_with("--dtype bf16 needs NCCL 2.10.3 or later; this library is NCCL 2.10.2"),
            "{e}"
        );
        assert!(check_dtype(DType::BF16, v(10, 3)).is_ok());
        for &d in DType::ALL {
            assert!(check_dtype(d, v(32, 3)).is_ok(), "{d}");
            if d != DType::BF16 {
                assert!(check_dtype(d, v(7, 8)).is_ok(), "{d}");
            }
        }
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
