//! Streaming (non-temporal) stores for outputs larger than the caches. A normal store first
//! reads the destination line into the cache (read for ownership), so writing a 64 MiB output
//! costs 128 MiB of memory traffic; a non-temporal store writes the line straight to memory.
//! For small outputs the normal path is faster (the line stays in cache for the next reader).

use crate::backend::host::reduce::reduce3;
use crate::collective::{DType, ReduceOp};

/// Staging block for streamed reductions: small enough to stay in L1.
const BLOCK: usize = 4096;

/// `dst = src`, with non-temporal stores where the CPU has them.
pub fn copy(dst: &mut [u8], src: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        copy_x86(dst, src);
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        dst.copy_from_slice(src);
    }
}

/// `dst = a (op) b`, computed into an L1-resident block, then streamed to `dst`.
pub fn reduce3_stream(dtype: DType, op: ReduceOp, dst: &mut [u8], a: &[u8], b: &[u8]) {
    let mut tmp = [0u64; BLOCK / 8];
    let tmp: &mut [u8] = bytemuck::cast_slice_mut(&mut tmp[..]);
    let pieces = dst
        .chunks_mut(BLOCK)
        .zip(a.chunks(BLOCK))
        .zip(b.chunks(BLOCK));
    for ((d, x), y) in pieces {
        let t = &mut tmp[..d.len()];
        reduce3(dtype, op, t, x, y);
        copy(d, t);
    }
}

/// Orders earlier streaming stores before later stores (call before publishing results).
pub fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: sfence has no preconditions; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(target_arch = "x86_64")]
fn copy_x86(dst: &mut [u8], src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    assert_eq!(dst.len(), src.len());
    // Normal copy up to the first 16-byte aligned destination address.
    let head = dst.as_ptr().align_offset(16).min(dst.len());
    dst[..head].copy_from_slice(&src[..head]);
    let body = (dst.len() - head) / 64 * 64;
    let (d, s) = (dst[head..].as_mut_ptr(), src[head..].as_ptr());
    let mut i = 0;
    while i < body {
        // SAFETY: i + 64 <= body keeps every access in bounds; stores go to a 16-byte aligned
        // address (head alignment, steps of 16); loads are unaligned loads. SSE2 is baseline.
        unsafe {
            for k in (0..64).step_by(16) {
                let v = _mm_loadu_si128(s.add(i + k) as *const __m128i);
                _mm_stream_si128(d.add(i + k) as *mut __m128i, v);
            }
        }
        i += 64;
    }
    let tail = head + body;
    dst[tail..].copy_from_slice(&src[tail..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_handles_every_alignment_and_length() {
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        for off in 0..17 {
            for len in [0, 1, 15, 16, 63, 64, 65, 200, 900] {
                let mut dst = vec![0u8; 1000];
                copy(&mut dst[off..off + len], &src[..len]);
                fence();
                assert_eq!(&dst[off..off + len], &src[..len]);
                assert!(dst[..off].iter().all(|&b| b == 0));
                assert!(dst[off + len..].iter().all(|&b| b == 0));
            }
        }
    }

    #[test]
    fn streamed_reduction_matches_plain() {
        let a: Vec<f32> = (0..3000).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..3000).map(|i| (2 * i) as f32).collect();
        let mut out = vec![0f32; 3000];
        reduce3_stream(
            DType::F32,
            ReduceOp::Sum,
            bytemuck::cast_slice_mut(&mut out),
            bytemuck::cast_slice(&a),
            bytemuck::cast_slice(&b),
        );
        fence();
        assert!(out.iter().enumerate().all(|(i, &v)| v == (3 * i) as f32));
    }
}
