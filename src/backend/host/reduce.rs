//! Reduction kernels on raw byte buffers, on the hot path of the shared-memory collectives.
//!
//! Buffers are viewed as typed slices so that the loops are plain element-wise loops the
//! compiler vectorises. f16 and bf16 are widened to f32 in blocks (f16 with `half`'s slice
//! conversions, which use F16C instructions where the CPU has them; bf16 with branch-free bit
//! operations that vectorise, where `half` converts one element at a time), combined, and
//! rounded back once (to nearest, ties to even);
//! since f32 carries more than twice the precision of either, the result equals the correctly
//! rounded half-precision operation. Buffers that are not aligned to the element size (a
//! transport may hand out any offset) are staged through aligned blocks on the stack: slower,
//! but correct and panic-free.
//!
//! fp8 (E4M3, E5M2) goes through f32 the same way, rounded back through f16 as NCCL's kernels
//! do (`__nv_fp8_e4m3(__hadd(__half(x), __half(y)))` in NCCL src/device/reduce_kernel.h),
//! saturating to the largest finite value.
//!
//! Semantics: integer sums and products wrap (two's complement, like NCCL); float max/min follow
//! `f32::max` / `f32::min` (a NaN operand yields the other operand). `avg` combines as a sum
//! and is finished by [`finish_avg`] once the sum is complete; `mulsum` is NCCL's only and is
//! refused before a host call is made (combined here as a sum).

use bytemuck::{Pod, Zeroable};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use crate::collective::{DType, Fp8, ReduceOp};

/// Elements per staging block: small enough to stay in L1 with three blocks, large enough to
/// amortise the per-block calls.
const BLOCK: usize = 256;

/// `dst[i] = dst[i] (op) src[i]` over elements of `dtype`. The lengths must be equal and a
/// multiple of the element size; a trailing partial element is left untouched.
pub fn reduce_into(dtype: DType, op: ReduceOp, dst: &mut [u8], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    debug_assert_eq!(dst.len() % dtype.size(), 0);
    match dtype {
        DType::F32 => elem_into::<f32>(op, dst, src),
        DType::F64 => elem_into::<f64>(op, dst, src),
        DType::I32 => elem_into::<i32>(op, dst, src),
        DType::I8 => elem_into::<i8>(op, dst, src),
        DType::U8 => elem_into::<u8>(op, dst, src),
        DType::U32 => elem_into::<u32>(op, dst, src),
        DType::I64 => elem_into::<i64>(op, dst, src),
        DType::U64 => elem_into::<u64>(op, dst, src),
        DType::F16 => half_into::<f16>(op, dst, src),
        DType::BF16 => half_into::<bf16>(op, dst, src),
        DType::F8E4M3 => half_into::<E4M3>(op, dst, src),
        DType::F8E5M2 => half_into::<E5M2>(op, dst, src),
    }
}

/// `dst[i] = a[i] (op) b[i]` over elements of `dtype`, in one pass. The lengths must be equal
/// and a multiple of the element size; a trailing partial element is left untouched.
pub fn reduce3(dtype: DType, op: ReduceOp, dst: &mut [u8], a: &[u8], b: &[u8]) {
    debug_assert!(dst.len() == a.len() && a.len() == b.len());
    debug_assert_eq!(dst.len() % dtype.size(), 0);
    match dtype {
        DType::F32 => elem3::<f32>(op, dst, a, b),
        DType::F64 => elem3::<f64>(op, dst, a, b),
        DType::I32 => elem3::<i32>(op, dst, a, b),
        DType::I8 => elem3::<i8>(op, dst, a, b),
        DType::U8 => elem3::<u8>(op, dst, a, b),
        DType::U32 => elem3::<u32>(op, dst, a, b),
        DType::I64 => elem3::<i64>(op, dst, a, b),
        DType::U64 => elem3::<u64>(op, dst, a, b),
        DType::F16 => half3::<f16>(op, dst, a, b),
        DType::BF16 => half3::<bf16>(op, dst, a, b),
        DType::F8E4M3 => half3::<E4M3>(op, dst, a, b),
        DType::F8E5M2 => half3::<E5M2>(op, dst, a, b),
    }
}

/// An element type the kernels combine natively.
trait Elem: Pod {
    fn sum(a: Self, b: Self) -> Self;
    fn prod(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
}

macro_rules! float_elem {
    ($t:ty) => {
        impl Elem for $t {
            #[inline(always)]
            fn sum(a: Self, b: Self) -> Self {
                a + b
            }
            #[inline(always)]
            fn prod(a: Self, b: Self) -> Self {
                a * b
            }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                a.max(b)
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                a.min(b)
            }
        }
    };
}
float_elem!(f32);
float_elem!(f64);

macro_rules! int_elem {
    ($($t:ty),+) => {$(
        impl Elem for $t {
            #[inline(always)]
            fn sum(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn prod(a: Self, b: Self) -> Self {
                a.wrapping_mul(b)
            }
            #[inline(always)]
            fn max(a: Self, b: Self) -> Self {
                Ord::max(a, b)
            }
            #[inline(always)]
            fn min(a: Self, b: Self) -> Self {
                Ord::min(a, b)
            }
        }
    )+};
}
int_elem!(i8, u8, i32, u32, i64, u64);

/// A half-precision or 8-bit float type combined through f32.
trait Half: Pod {
    /// `dst[i] = src[i]` as f32 (equal lengths).
    fn widen(src: &[Self], dst: &mut [f32]);
    /// `dst[i] = src[i]` rounded to nearest, ties to even (equal lengths).
    fn narrow(src: &[f32], dst: &mut [Self]);
}

impl Half for f16 {
    #[inline(always)]
    fn widen(src: &[Self], dst: &mut [f32]) {
        src.convert_to_f32_slice(dst);
    }
    #[inline(always)]
    fn narrow(src: &[f32], dst: &mut [Self]) {
        dst.convert_from_f32_slice(src);
    }
}

impl Half for bf16 {
    #[inline(always)]
    fn widen(src: &[Self], dst: &mut [f32]) {
        // bf16 is the top half of an f32.
        for (d, s) in dst.iter_mut().zip(src) {
            *d = f32::from_bits(u32::from(s.to_bits()) << 16);
        }
    }
    #[inline(always)]
    fn narrow(src: &[f32], dst: &mut [Self]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = bf16::from_bits(f32_to_bf16_bits(s));
        }
    }
}

/// Rounds an f32 to bf16 bits, to nearest with ties to even, as `bf16::from_f32` does, but
/// without branches so the loop vectorises. Adding `0x7FFF` plus the lowest kept bit carries
/// into the kept half exactly when the dropped half is above the tie, or at the tie with an
/// odd kept half. NaN keeps its sign and top payload bits and is made quiet.
#[inline(always)]
fn f32_to_bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let rounded = b.wrapping_add(0x7FFF + ((b >> 16) & 1)) >> 16;
    let quiet_nan = (b >> 16) | 0x40;
    (if x.is_nan() { quiet_nan } else { rounded }) as u16
}

macro_rules! fp8_elem {
    ($t:ident, $f:expr) => {
        /// One byte of the fp8 format (see [`Fp8`]).
        #[derive(Clone, Copy)]
        #[repr(transparent)]
        struct $t(u8);
        // SAFETY: a transparent wrapper of u8: every bit pattern is valid, no padding.
        unsafe impl Zeroable for $t {}
        unsafe impl Pod for $t {}
        impl Half for $t {
            #[inline(always)]
            fn widen(src: &[Self], dst: &mut [f32]) {
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = $f.decode(s.0) as f32;
                }
            }
            #[inline(always)]
            fn narrow(src: &[f32], dst: &mut [Self]) {
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = $t($f.encode(f16::from_f32(s).to_f64()));
                }
            }
        }
    };
}
fp8_elem!(E4M3, Fp8::E4M3);
fp8_elem!(E5M2, Fp8::E5M2);

/// The element function of `op`. Returned as a fn item per arm so each caller is
/// monomorphised with the operation inlined into its loop.
macro_rules! with_op {
    ($op:expr, $t:ty, |$f:ident| $body:expr) => {
        match $op {
            // avg sums, then is finished; mulsum never reaches the host (see the module docs).
            ReduceOp::Sum | ReduceOp::Avg | ReduceOp::MulSum => {
                let $f = <$t as Elem>::sum;
                $body
            }
            ReduceOp::Prod => {
                let $f = <$t as Elem>::prod;
                $body
            }
            ReduceOp::Max => {
                let $f = <$t as Elem>::max;
                $body
            }
            ReduceOp::Min => {
                let $f = <$t as Elem>::min;
                $body
            }
        }
    };
}

fn elem_into<T: Elem>(op: ReduceOp, dst: &mut [u8], src: &[u8]) {
    with_op!(op, T, |f| bytes2::<T>(dst, src, |d, s| combine2(d, s, f)))
}

fn elem3<T: Elem>(op: ReduceOp, dst: &mut [u8], a: &[u8], b: &[u8]) {
    with_op!(op, T, |f| bytes3::<T>(dst, a, b, |d, x, y| combine3(
        d, x, y, f
    )))
}

fn half_into<H: Half>(op: ReduceOp, dst: &mut [u8], src: &[u8]) {
    with_op!(op, f32, |f| bytes2::<H>(dst, src, |d, s| widen2(d, s, f)))
}

fn half3<H: Half>(op: ReduceOp, dst: &mut [u8], a: &[u8], b: &[u8]) {
    with_op!(op, f32, |f| bytes3::<H>(dst, a, b, |d, x, y| widen3(
        d, x, y, f
    )))
}

/// The element-wise loop `d[i] = f(d[i], s[i])`.
#[inline(always)]
fn combine2<T: Copy>(d: &mut [T], s: &[T], f: impl Fn(T, T) -> T) {
    for (x, &y) in d.iter_mut().zip(s) {
        *x = f(*x, y);
    }
}

/// The element-wise loop `d[i] = f(a[i], b[i])`.
#[inline(always)]
fn combine3<T: Copy>(d: &mut [T], a: &[T], b: &[T], f: impl Fn(T, T) -> T) {
    for ((x, &y), &z) in d.iter_mut().zip(a).zip(b) {
        *x = f(y, z);
    }
}

/// `d = f(d, s)` on half-precision slices, through f32 blocks.
#[inline(always)]
fn widen2<H: Half>(d: &mut [H], s: &[H], f: impl Fn(f32, f32) -> f32 + Copy) {
    let (mut wd, mut ws) = ([0f32; BLOCK], [0f32; BLOCK]);
    for (dc, sc) in d.chunks_mut(BLOCK).zip(s.chunks(BLOCK)) {
        let n = dc.len().min(sc.len());
        H::widen(&dc[..n], &mut wd[..n]);
        H::widen(&sc[..n], &mut ws[..n]);
        combine2(&mut wd[..n], &ws[..n], f);
        H::narrow(&wd[..n], &mut dc[..n]);
    }
}

/// `d = f(a, b)` on half-precision slices, through f32 blocks.
#[inline(always)]
fn widen3<H: Half>(d: &mut [H], a: &[H], b: &[H], f: impl Fn(f32, f32) -> f32 + Copy) {
    let (mut wd, mut wa, mut wb) = ([0f32; BLOCK], [0f32; BLOCK], [0f32; BLOCK]);
    let chunks = d
        .chunks_mut(BLOCK)
        .zip(a.chunks(BLOCK))
        .zip(b.chunks(BLOCK));
    for ((dc, ac), bc) in chunks {
        let n = dc.len().min(ac.len()).min(bc.len());
        H::widen(&ac[..n], &mut wa[..n]);
        H::widen(&bc[..n], &mut wb[..n]);
        combine3(&mut wd[..n], &wa[..n], &wb[..n], f);
        H::narrow(&wd[..n], &mut dc[..n]);
    }
}

/// Runs `kernel` on `dst` and `src` viewed as `[T]`: directly when both are aligned, else
/// through aligned staging blocks.
#[inline(always)]
fn bytes2<T: Pod>(dst: &mut [u8], src: &[u8], kernel: impl Fn(&mut [T], &[T])) {
    let n = whole_bytes::<T>(dst.len().min(src.len()));
    let (dst, src) = (&mut dst[..n], &src[..n]);
    if let Ok(s) = bytemuck::try_cast_slice::<u8, T>(src) {
        if let Ok(d) = bytemuck::try_cast_slice_mut::<u8, T>(dst) {
            kernel(d, s);
            return;
        }
    }
    let (mut bd, mut bs) = ([T::zeroed(); BLOCK], [T::zeroed(); BLOCK]);
    let block = BLOCK * size_of::<T>();
    for (dc, sc) in dst.chunks_mut(block).zip(src.chunks(block)) {
        let k = dc.len() / size_of::<T>();
        bytemuck::cast_slice_mut::<T, u8>(&mut bd[..k]).copy_from_slice(dc);
        bytemuck::cast_slice_mut::<T, u8>(&mut bs[..k]).copy_from_slice(sc);
        kernel(&mut bd[..k], &bs[..k]);
        dc.copy_from_slice(bytemuck::cast_slice(&bd[..k]));
    }
}

/// Runs `kernel` on `dst`, `a` and `b` viewed as `[T]`: directly when all are aligned, else
/// through aligned staging blocks.
#[inline(always)]
fn bytes3<T: Pod>(dst: &mut [u8], a: &[u8], b: &[u8], kernel: impl Fn(&mut [T], &[T], &[T])) {
    let n = whole_bytes::<T>(dst.len().min(a.len()).min(b.len()));
    let (dst, a, b) = (&mut dst[..n], &a[..n], &b[..n]);
    let typed = (
        bytemuck::try_cast_slice::<u8, T>(a),
        bytemuck::try_cast_slice::<u8, T>(b),
    );
    if let (Ok(x), Ok(y)) = typed {
        if let Ok(d) = bytemuck::try_cast_slice_mut::<u8, T>(dst) {
            kernel(d, x, y);
            return;
        }
    }
    let (mut bd, mut ba, mut bb) = (
        [T::zeroed(); BLOCK],
        [T::zeroed(); BLOCK],
        [T::zeroed(); BLOCK],
    );
    let block = BLOCK * size_of::<T>();
    let chunks = dst
        .chunks_mut(block)
        .zip(a.chunks(block))
        .zip(b.chunks(block));
    for ((dc, ac), bc) in chunks {
        let k = dc.len() / size_of::<T>();
        bytemuck::cast_slice_mut::<T, u8>(&mut ba[..k]).copy_from_slice(ac);
        bytemuck::cast_slice_mut::<T, u8>(&mut bb[..k]).copy_from_slice(bc);
        kernel(&mut bd[..k], &ba[..k], &bb[..k]);
        dc.copy_from_slice(bytemuck::cast_slice(&bd[..k]));
    }
}

/// The largest byte count not above `len` that holds whole elements of `T`.
#[inline(always)]
fn whole_bytes<T>(len: usize) -> usize {
    len - len % size_of::<T>()
}

#[path = "reduce/avg.rs"]
mod avg;
pub use avg::finish_avg;

#[cfg(test)]
#[path = "reduce/tests.rs"]
mod tests;
