//! One element of a buffer as a number: written and read in any dtype, and the limits within
//! which the check's integer patterns stay exact.

use half::{bf16, f16};

use crate::collective::DType;

/// Writes `v` as element `i` of `buf` in `dtype` (native endian; integers saturate, fp8 rounds
/// to nearest and saturates). An index outside `buf` writes nothing.
pub fn write_value(dtype: DType, buf: &mut [u8], i: usize, v: f64) {
    let Some(at) = element_range(dtype, i).and_then(|r| buf.get_mut(r)) else {
        return;
    };
    match dtype {
        DType::F32 => at.copy_from_slice(&(v as f32).to_ne_bytes()),
        DType::F64 => at.copy_from_slice(&v.to_ne_bytes()),
        DType::I32 => at.copy_from_slice(&(v as i32).to_ne_bytes()),
        DType::I8 => at.copy_from_slice(&(v as i8).to_ne_bytes()),
        DType::U8 => at.copy_from_slice(&(v as u8).to_ne_bytes()),
        DType::U32 => at.copy_from_slice(&(v as u32).to_ne_bytes()),
        DType::I64 => at.copy_from_slice(&(v as i64).to_ne_bytes()),
        DType::U64 => at.copy_from_slice(&(v as u64).to_ne_bytes()),
        DType::F16 => at.copy_from_slice(&f16::from_f64(v).to_ne_bytes()),
        DType::BF16 => at.copy_from_slice(&bf16::from_f64(v).to_ne_bytes()),
        DType::F8E4M3 | DType::F8E5M2 => {
            let format = dtype.fp8().map(|f| f.encode(v));
            at[0] = format.unwrap_or(0);
        }
    }
}

/// Reads element `i` of `buf` in `dtype` (native endian) as f64; NaN when `i` is outside `buf`.
pub fn read_value(dtype: DType, buf: &[u8], i: usize) -> f64 {
    let Some(at) = element_range(dtype, i).and_then(|r| buf.get(r)) else {
        return f64::NAN;
    };
    match dtype {
        DType::F32 => f32::from_ne_bytes(to_array(at)) as f64,
        DType::F64 => f64::from_ne_bytes(to_array(at)),
        DType::I32 => i32::from_ne_bytes(to_array(at)) as f64,
        DType::I8 => i8::from_ne_bytes(to_array(at)) as f64,
        DType::U8 => u8::from_ne_bytes(to_array(at)) as f64,
        DType::U32 => u32::from_ne_bytes(to_array(at)) as f64,
        DType::I64 => i64::from_ne_bytes(to_array(at)) as f64,
        DType::U64 => u64::from_ne_bytes(to_array(at)) as f64,
        DType::F16 => f16::from_ne_bytes(to_array(at)).to_f64(),
        DType::BF16 => bf16::from_ne_bytes(to_array(at)).to_f64(),
        DType::F8E4M3 | DType::F8E5M2 => dtype.fp8().map_or(f64::NAN, |f| f.decode(at[0])),
    }
}

/// The byte range of element `i`, or `None` when it does not fit in `usize`.
fn element_range(dtype: DType, i: usize) -> Option<std::ops::Range<usize>> {
    let start = i.checked_mul(dtype.size())?;
    Some(start..start.checked_add(dtype.size())?)
}

/// The first `N` bytes of `at` as an array (callers pass exactly `N` bytes).
fn to_array<const N: usize>(at: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&at[..N]);
    a
}

/// The largest integer below which every integer, and so every partial sum of non-negative
/// integers not above it, is exact in `dtype` (fp8: 2^(mantissa bits + 1)).
pub fn exact_limit(dtype: DType) -> u64 {
    match dtype {
        DType::F8E5M2 => 1 << 3,
        DType::F8E4M3 => 1 << 4,
        DType::BF16 => 1 << 8,
        DType::F16 => 1 << 11,
        DType::F32 => 1 << 24,
        DType::F64 => 1 << 53,
        DType::I8 => i8::MAX as u64,
        DType::U8 => u8::MAX as u64,
        DType::I32 => i32::MAX as u64,
        DType::U32 => u32::MAX as u64,
        DType::I64 => i64::MAX as u64,
        DType::U64 => u64::MAX,
    }
}

/// The largest `k` such that 2^k is a finite value of `dtype` that f64 holds exactly: a
/// product of factors 1 and 2 with at most `k` twos is exact in any order. Capped at 62 so
/// that the check's f64 arithmetic stays exact.
pub fn power_limit(dtype: DType) -> u32 {
    match dtype {
        DType::I8 => 6,
        DType::U8 => 7,
        DType::F8E4M3 => 8,
        DType::F16 | DType::F8E5M2 => 15,
        DType::I32 => 30,
        DType::U32 => 31,
        DType::F32 | DType::F64 | DType::BF16 | DType::I64 | DType::U64 => 62,
    }
}

/// What NCCL's `ncclAvg` leaves where one rank gave `x` and the others 0, over `p` ranks
/// (`hostToDevRedOp` in NCCL src/enqueue.cc): integers `x / p` truncated; floats `x` times
/// 1/p rounded to the type (through f32 for the 16- and 8-bit types, as NCCL converts it),
/// the product rounded once to the type (fp8: to f16, then to fp8, as its kernels multiply in
/// half precision).
pub fn avg_of_one(dtype: DType, x: f64, p: usize) -> f64 {
    let p = p.max(1) as f64;
    let c = 1.0 / p;
    let c32 = f64::from(c as f32);
    match dtype {
        DType::F64 => x * c,
        DType::F32 => f64::from((x as f32) * (c as f32)),
        DType::F16 => f16::from_f64(x * f16::from_f64(c32).to_f64()).to_f64(),
        DType::BF16 => bf16::from_f64(x * bf16::from_f64(c32).to_f64()).to_f64(),
        DType::F8E4M3 | DType::F8E5M2 => dtype.fp8().map_or(f64::NAN, |f| {
            let c8 = f.decode(f.encode(c32));
            f.decode(f.encode(f16::from_f64(x * c8).to_f64()))
        }),
        DType::I8 | DType::U8 | DType::I32 | DType::U32 | DType::I64 | DType::U64 => {
            (x / p).trunc()
        }
    }
}
