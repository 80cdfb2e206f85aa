//! The input and output buffers of one rank's calls, as the host and MPI backends hand them to
//! a collective: sized per call from its [`Shape`], replaced by a larger one on demand and
//! never shrunk.

use std::ops::Range;

use crate::collective::{Layout, Op, Shape};

/// Input and output held as u64 words, so that both are 8-byte aligned and the reduction
/// kernels can view them as slices of any element type (f64 at most). They grow to the largest
/// call seen and keep that size, so a timed loop never allocates once its first call is sized.
#[derive(Default)]
pub struct CallBuffers {
    input: Vec<u64>,
    output: Vec<u64>,
}

impl CallBuffers {
    /// Input and output bytes of a call of `shape`. In place, `output` is the one buffer, as
    /// long as the larger of the call's input and output, and `input` is empty.
    pub fn views(&mut self, shape: &Shape, in_place: bool) -> (&mut [u8], &mut [u8]) {
        let (inb, outb) = if in_place {
            (0, shape.in_bytes.max(shape.out_bytes))
        } else {
            (shape.in_bytes, shape.out_bytes)
        };
        grow(&mut self.input, inb);
        grow(&mut self.output, outb);
        let input: &mut [u8] = bytemuck::cast_slice_mut(&mut self.input[..]);
        let output: &mut [u8] = bytemuck::cast_slice_mut(&mut self.output[..]);
        (&mut input[..inb], &mut output[..outb])
    }

    /// Where a call of `op` reads rank `rank`'s input, in nccl-tests' layout: the input buffer,
    /// or in place the rank's block of the one buffer (AllGather, Gather) or all of it.
    pub fn input_region(
        &mut self,
        op: Op,
        shape: &Shape,
        in_place: bool,
        rank: usize,
    ) -> &mut [u8] {
        let (input, output) = self.views(shape, in_place);
        if !in_place {
            return input;
        }
        match op.layout() {
            Layout::Collect => &mut output[own_block(rank, shape.in_bytes)],
            Layout::Whole | Layout::Distribute | Layout::Exchange | Layout::Uneven => output,
        }
    }

    /// Where a call of `op` leaves rank `rank`'s result, in nccl-tests' layout: the output
    /// buffer, or in place the rank's block of the one buffer (ReduceScatter, Scatter) or all of
    /// it.
    pub fn result_region(
        &mut self,
        op: Op,
        shape: &Shape,
        in_place: bool,
        rank: usize,
    ) -> &mut [u8] {
        let (_, output) = self.views(shape, in_place);
        match op.layout() {
            Layout::Distribute if in_place => &mut output[own_block(rank, shape.out_bytes)],
            Layout::Distribute
            | Layout::Whole
            | Layout::Collect
            | Layout::Exchange
            | Layout::Uneven => output,
        }
    }
}

/// The bytes of rank `rank`'s block of `block` bytes in a buffer split per rank.
fn own_block(rank: usize, block: usize) -> Range<usize> {
    rank * block..(rank + 1) * block
}

/// From this size up a buffer asks for transparent huge pages.
const HUGE_PAGES_FROM: usize = 4 << 20;

/// Makes `v` hold at least `bytes` bytes; it never shrinks, and a larger one is a fresh
/// allocation whose contents are zero, not the old ones (every point fills its input before
/// its first call). Growing in place would move a large buffer's pages (`mremap`) to an address
/// that is not 2 MiB aligned and so split its huge pages for good: a sweep whose second op needs
/// a larger input ran that op's 64 MiB Gather at half speed. A large buffer is advised to use
/// transparent huge pages before its pages are first touched (where THP is `madvise`, the
/// common default, the kernel backs it with 2 MiB pages only when asked): a copy of tens of
/// MiB then walks 512 times fewer pages, and a single-copy read pins 512 times fewer.
fn grow(v: &mut Vec<u64>, bytes: usize) {
    let words = bytes.div_ceil(8);
    if v.len() < words {
        // Freed first, so that old and new are never held together.
        *v = Vec::new();
        *v = advised(bytes);
    }
}

/// A zeroed buffer of at least `bytes` bytes, advised to use transparent huge pages before
/// its first touch when it is large (see [`grow`]); also the buffers of `examples/memcpy.rs`,
/// so that its copy rate is measured on the pages the collectives use.
pub fn advised(bytes: usize) -> Vec<u64> {
    let words = bytes.div_ceil(8);
    let mut v: Vec<u64> = Vec::with_capacity(words);
    if bytes >= HUGE_PAGES_FROM {
        advise_huge_pages(v.as_mut_ptr().cast(), v.capacity() * 8);
    }
    v.resize(words, 0);
    v
}

/// `madvise(MADV_HUGEPAGE)` over the 2 MiB-aligned part of `len` bytes at `start`. Advice
/// only: where the kernel has no THP, or refuses, nothing changes but the page size.
fn advise_huge_pages(start: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let (from, to) = (start as usize, start as usize + len);
    let (first, last) = (from.next_multiple_of(HUGE), to / HUGE * HUGE);
    if last > first {
        // SAFETY: [first, last) lies inside the vector's allocation, which this process owns;
        // MADV_HUGEPAGE changes no contents and its failure is harmless (ignored).
        unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                last - first,
                libc::MADV_HUGEPAGE,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{DType, Op};

    #[test]
    fn out_of_place_views_are_the_calls_input_and_output() {
        // AllGather of 100 bytes of f32 over 3 ranks: 8 elements in, 24 out.
        let shape = Shape::new(Op::AllGather, DType::F32, 100, 3);
        let mut b = CallBuffers::default();
        let (input, output) = b.views(&shape, false);
        assert_eq!((input.len(), output.len()), (32, 96));
    }

    #[test]
    fn in_place_the_output_holds_the_larger_side_and_input_is_empty() {
        // ReduceScatter of 64 bytes of f64 over 2 ranks: 64 bytes in, 32 out.
        let shape = Shape::new(Op::ReduceScatter, DType::F64, 64, 2);
        let mut b = CallBuffers::default();
        let (input, output) = b.views(&shape, true);
        assert_eq!((input.len(), output.len()), (0, 64));
        let shape = Shape::new(Op::AllGather, DType::F32, 100, 3);
        let (input, output) = b.views(&shape, true);
        assert_eq!((input.len(), output.len()), (0, 96));
    }

    #[test]
    fn a_smaller_call_keeps_the_earlier_allocation() {
        let big = Shape::new(Op::AllReduce, DType::F32, 1 << 16, 2);
        let small = Shape::new(Op::AllReduce, DType::F32, 12, 2);
        let mut b = CallBuffers::default();
        let first = b.views(&big, false).1.as_ptr();
        let (input, output) = b.views(&small, false);
        assert_eq!((input.len(), output.len()), (12, 12));
        assert_eq!(output.as_ptr(), first);
        assert_eq!((b.input.len(), b.output.len()), (8192, 8192));
    }

    #[test]
    fn views_are_8_byte_aligned_whatever_the_size() {
        // 3 bf16 elements: 6 bytes, not a whole word.
        let shape = Shape::new(Op::AllReduce, DType::BF16, 6, 2);
        let mut b = CallBuffers::default();
        let (input, output) = b.views(&shape, false);
        assert_eq!((input.len(), output.len()), (6, 6));
        assert_eq!(input.as_ptr() as usize % 8, 0);
        assert_eq!(output.as_ptr() as usize % 8, 0);
    }

    #[test]
    fn input_and_result_regions_follow_nccl_tests_layout() {
        let mut b = CallBuffers::default();
        // Where a region starts in the one in-place buffer.
        let offset = |b: &mut CallBuffers, shape: &Shape, region: *const u8| {
            region as usize - b.views(shape, true).1.as_ptr() as usize
        };
        // 4 ranks, 64 B: blocks of 16 B. In place, AllGather and Gather read rank 2's block.
        for op in [Op::AllGather, Op::Gather] {
            let shape = Shape::new(op, DType::F32, 64, 4);
            let r = b.input_region(op, &shape, true, 2);
            let (len, at) = (r.len(), r.as_ptr());
            assert_eq!((len, offset(&mut b, &shape, at)), (16, 32), "{op}");
            assert_eq!(b.result_region(op, &shape, true, 2).len(), 64, "{op}");
        }
        // ReduceScatter and Scatter leave rank 2's result in its block.
        for op in [Op::ReduceScatter, Op::Scatter] {
            let shape = Shape::new(op, DType::F32, 64, 4);
            assert_eq!(b.input_region(op, &shape, true, 2).len(), 64, "{op}");
            let r = b.result_region(op, &shape, true, 2);
            let (len, at) = (r.len(), r.as_ptr());
            assert_eq!((len, offset(&mut b, &shape, at)), (16, 32), "{op}");
        }
        // Out of place: the input and the output, whole.
        let shape = Shape::new(Op::Scatter, DType::F32, 64, 4);
        assert_eq!(b.input_region(Op::Scatter, &shape, false, 2).len(), 64);
        assert_eq!(b.result_region(Op::Scatter, &shape, false, 2).len(), 16);
    }
}
