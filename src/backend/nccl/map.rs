//! collbench's element types and reductions as NCCL enum values.

use super::loader::Version;
use super::sys;
use crate::collective::{DType, ReduceOp};

/// The `ncclDataType_t` of an element type.
pub fn dtype(d: DType) -> sys::ncclDataType_t {
    match d {
        DType::I8 => sys::NCCL_INT8,
        DType::U8 => sys::NCCL_UINT8,
        DType::I32 => sys::NCCL_INT32,
        DType::U32 => sys::NCCL_UINT32,
        DType::I64 => sys::NCCL_INT64,
        DType::U64 => sys::NCCL_UINT64,
        DType::F16 => sys::NCCL_FLOAT16,
        DType::F32 => sys::NCCL_FLOAT32,
        DType::F64 => sys::NCCL_FLOAT64,
        DType::BF16 => sys::NCCL_BFLOAT16,
        DType::F8E4M3 => sys::NCCL_FLOAT8E4M3,
        DType::F8E5M2 => sys::NCCL_FLOAT8E5M2,
    }
}

/// The NCCL release whose `ncclDataType_t` first has `d` (NCCL release notes; nccl.h's
/// history): bfloat16 came in 2.10.3, fp8 in 2.24.3, the others are in every NCCL 2.
pub fn dtype_since(d: DType) -> Version {
    match d {
        DType::BF16 => v2(10, 3),
        DType::F8E4M3 | DType::F8E5M2 => v2(24, 3),
        DType::F32 | DType::F64 | DType::F16 | DType::I32 => v2(0, 0),
        DType::I8 | DType::U8 | DType::U32 | DType::I64 | DType::U64 => v2(0, 0),
    }
}

/// NCCL 2.`minor`.`patch`.
fn v2(minor: i32, patch: i32) -> Version {
    Version {
        major: 2,
        minor,
        patch,
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

/// Refuses `ncclAvg` before 2.10.3 (its release notes: "Added ncclAvg operation"), and
/// mulsum where the library lacks `ncclRedOpCreatePreMulSum` (2.11.4).
pub fn check_redop(op: ReduceOp, library: Version, has_pre_mul_sum: bool) -> Result<(), String> {
    let key = |v: Version| (v.major, v.minor, v.patch);
    let fix = "point COLLBENCH_NCCL_LIB at a newer libnccl.so.2 or pick another --redop";
    match op {
        ReduceOp::Avg if key(library) < key(v2(10, 3)) => Err(format!(
            "--redop avg needs NCCL 2.10.3 or later; this library is NCCL {library}: {fix}"
        )),
        ReduceOp::MulSum if !has_pre_mul_sum => Err(format!(
            "--redop mulsum needs ncclRedOpCreatePreMulSum (NCCL 2.11.4 or later), which this \
             library (NCCL {library}) does not export: {fix}"
        )),
        _ => Ok(()),
    }
}

/// The built-in `ncclRedOp_t` of a reduction; `None` for mulsum, an op each communicator
/// creates ([`super::premul::ScaledSum`]).
pub fn redop(op: ReduceOp) -> Option<sys::ncclRedOp_t> {
    match op {
        ReduceOp::Sum => Some(sys::NCCL_SUM),
        ReduceOp::Prod => Some(sys::NCCL_PROD),
        ReduceOp::Max => Some(sys::NCCL_MAX),
        ReduceOp::Min => Some(sys::NCCL_MIN),
        ReduceOp::Avg => Some(sys::NCCL_AVG),
        ReduceOp::MulSum => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_match_nccl_h() {
        // nccl.h: ncclInt8 0, ncclUint8 1, ncclInt32 2, ncclUint32 3, ncclInt64 4, ncclUint64 5,
        // ncclFloat16 6, ncclFloat32 7, ncclFloat64 8, ncclBfloat16 9, ncclFloat8e4m3 10,
        // ncclFloat8e5m2 11.
        let want = [
            (DType::F32, 7),
            (DType::F64, 8),
            (DType::F16, 6),
            (DType::BF16, 9),
            (DType::I32, 2),
            (DType::I8, 0),
            (DType::U8, 1),
            (DType::U32, 3),
            (DType::I64, 4),
            (DType::U64, 5),
            (DType::F8E4M3, 10),
            (DType::F8E5M2, 11),
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
            if dtype_since(d) == v(0, 0) {
                assert!(check_dtype(d, v(7, 8)).is_ok(), "{d}");
            }
        }
        let e = check_dtype(DType::F8E4M3, v(23, 4)).unwrap_err();
        assert!(
            e.starts_with("--dtype f8e4m3 needs NCCL 2.24.3 or later"),
            "{e}"
        );
        assert!(check_dtype(DType::F8E5M2, v(24, 3)).is_ok());
    }

    #[test]
    fn reductions_match_nccl_h() {
        // ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4; mulsum is made.
        let want = [
            (ReduceOp::Sum, Some(0)),
            (ReduceOp::Prod, Some(1)),
            (ReduceOp::Max, Some(2)),
            (ReduceOp::Min, Some(3)),
            (ReduceOp::Avg, Some(4)),
            (ReduceOp::MulSum, None),
        ];
        for (op, raw) in want {
            assert_eq!(redop(op), raw, "{op}");
        }
        assert_eq!(
            ReduceOp::ALL.len(),
            want.len(),
            "a new ReduceOp needs an NCCL mapping"
        );
    }

    #[test]
    fn avg_and_mulsum_are_refused_by_libraries_without_them() {
        let v = |minor, patch| Version {
            major: 2,
            minor,
            patch,
        };
        let e = check_redop(ReduceOp::Avg, v(10, 0), true).unwrap_err();
        assert!(
            e.starts_with("--redop avg needs NCCL 2.10.3 or later; this library is NCCL 2.10.0"),
            "{e}"
        );
        let e = check_redop(ReduceOp::MulSum, v(11, 4), false).unwrap_err();
        assert!(e.contains("ncclRedOpCreatePreMulSum"), "{e}");
        for &op in ReduceOp::ALL {
            assert!(check_redop(op, v(10, 3), true).is_ok(), "{op}");
        }
    }
}
