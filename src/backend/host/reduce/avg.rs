//! The end of the host's `avg`: the complete sum, divided as NCCL divides.

use bytemuck::Pod;
use half::{bf16, f16};

use crate::collective::{DType, Fp8};

/// Finishes an `avg` whose sum over `p` ranks `buf` holds, as NCCL computes `ncclAvg`
/// (`hostToDevRedOp` in NCCL src/enqueue.cc): integers divide by `p`, truncating towards zero;
/// floats multiply by 1/p rounded to the type (through f32 for the 16- and 8-bit types, as
/// NCCL converts it), the product rounded once (fp8 through f16, as its kernels multiply).
/// NCCL multiplies each input before the sum, the host the sum after it: the same value
/// wherever one rank's input is non-zero, as in the check's pattern for float `avg`.
pub fn finish_avg(dtype: DType, p: usize, buf: &mut [u8]) {
    let n = p.max(1);
    let c = 1.0 / n as f64;
    let half_c = |to: fn(f32) -> f32| to(c as f32);
    match dtype {
        DType::I8 => map_elems(buf, |x: i8| (i64::from(x) / n as i64) as i8),
        DType::U8 => map_elems(buf, |x: u8| (x as usize / n) as u8),
        DType::I32 => map_elems(buf, |x: i32| (i64::from(x) / n as i64) as i32),
        DType::U32 => map_elems(buf, |x: u32| (x as u64 / n as u64) as u32),
        DType::I64 => map_elems(buf, |x: i64| (i128::from(x) / n as i128) as i64),
        DType::U64 => map_elems(buf, |x: u64| x / n as u64),
        DType::F64 => map_elems(buf, |x: f64| x * c),
        DType::F32 => map_elems(buf, |x: f32| x * c as f32),
        DType::F16 => {
            let c = half_c(|x| f16::from_f32(x).to_f32());
            map_elems(buf, |x: f16| f16::from_f32(x.to_f32() * c));
        }
        DType::BF16 => {
            let c = half_c(|x| bf16::from_f32(x).to_f32());
            map_elems(buf, |x: bf16| bf16::from_f32(x.to_f32() * c));
        }
        DType::F8E4M3 => finish_fp8_avg(Fp8::E4M3, c, buf),
        DType::F8E5M2 => finish_fp8_avg(Fp8::E5M2, c, buf),
    }
}

fn finish_fp8_avg(f: Fp8, c: f64, buf: &mut [u8]) {
    let c = f.decode(f.encode(f64::from(c as f32)));
    for b in buf.iter_mut() {
        let product = f16::from_f64(f.decode(*b) * c).to_f64();
        *b = f.encode(product);
    }
}

/// `x = f(x)` over the whole elements of `buf`: as a typed slice where it is aligned (the
/// loop the compiler vectorises; this runs inside every timed avg call), else element by
/// element at any alignment.
fn map_elems<T: Pod>(buf: &mut [u8], f: impl Fn(T) -> T) {
    let whole = buf.len() - buf.len() % size_of::<T>();
    if let Ok(typed) = bytemuck::try_cast_slice_mut::<u8, T>(&mut buf[..whole]) {
        for x in typed.iter_mut() {
            *x = f(*x);
        }
        return;
    }
    for chunk in buf.chunks_exact_mut(size_of::<T>()) {
        let x: T = bytemuck::pod_read_unaligned(chunk);
        chunk.copy_from_slice(bytemuck::bytes_of(&f(x)));
    }
}
