//! Where one rank's call of a point reads and writes in its two device buffers: nccl-tests
//! buffer semantics in and out of place, and the buffer sizes a whole sweep needs.

use crate::check::{count_wrong_in_with, fill_input_from, Piece};
use crate::collective::uneven::RankCounts;
use crate::collective::Layout;
use crate::error::Result;
use crate::model::call::Call;
use crate::model::plan::Point;

/// Which device buffer a region lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    Input,
    Output,
}

/// A byte range of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub buf: Buf,
    pub offset: usize,
    pub len: usize,
}

/// Where one rank's call of a point reads, writes, is filled and is checked. In place follows
/// nccl-tests and nccl.h: AllGather sends from its own block of the output
/// (`recv + rank × sendcount`), ReduceScatter receives into its own block of the input
/// (`send + rank × recvcount`), the other ops use one buffer for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub send: Region,
    pub recv: Region,
    /// Where the input pattern goes (the send region).
    pub fill: Region,
    /// What the checker reads (the receive region).
    pub check: Region,
    /// The whole output buffer the point uses, poisoned before the checked call.
    pub output_len: usize,
}

/// The placement of `p` for the rank at index `me` of its group.
pub fn placement(p: &Point, me: usize) -> Placement {
    let s = &p.call.shape;
    let region = |buf, offset, len| Region { buf, offset, len };
    let (send, recv) = match (p.in_place, p.call.op.layout()) {
        (false, _) => (
            region(Buf::Input, 0, s.in_bytes),
            region(Buf::Output, 0, s.out_bytes),
        ),
        (true, Layout::Collect) => (
            region(Buf::Output, me * s.in_bytes, s.in_bytes),
            region(Buf::Output, 0, s.out_bytes),
        ),
        (true, Layout::Distribute) => (
            region(Buf::Output, 0, s.in_bytes),
            region(Buf::Output, me * s.out_bytes, s.out_bytes),
        ),
        (true, Layout::Whole | Layout::Exchange | Layout::Uneven) => (
            region(Buf::Output, 0, s.in_bytes),
            region(Buf::Output, 0, s.out_bytes),
        ),
    };
    let output_len = if p.in_place {
        s.in_bytes.max(s.out_bytes)
    } else {
        s.out_bytes
    };
    Placement {
        send,
        recv,
        fill: send,
        check: recv,
        output_len,
    }
}

/// The largest input and output buffers any of `points` needs.
pub fn buffer_sizes<'a>(points: impl Iterator<Item = &'a Point>) -> (usize, usize) {
    points.fold((0, 0), |(i, o), p| {
        let pl = placement(p, 0);
        let input = if p.in_place { 0 } else { p.call.shape.in_bytes };
        (i.max(input), o.max(pl.output_len))
    })
}

/// The largest piece of a device buffer filled or checked through host memory at once: a
/// multiple of every element size, large enough that copies run at full speed.
pub const HOST_PIECE_BYTES: usize = 64 << 20;

/// `r` cut into pieces of at most [`HOST_PIECE_BYTES`], each with the index of its first
/// element (elements of `elem` bytes).
pub fn pieces(r: Region, elem: usize) -> impl Iterator<Item = (usize, Region)> {
    (0..r.len).step_by(HOST_PIECE_BYTES).map(move |start| {
        let piece = Region {
            buf: r.buf,
            offset: r.offset + start,
            len: HOST_PIECE_BYTES.min(r.len - start),
        };
        (start / elem, piece)
    })
}

/// Where a point's pieces are copied to and from: the rank's device buffers on a GPU, host
/// memory in the tests, which so run the very loops a GPU runs.
pub trait PieceCopy {
    /// Copies `bytes` (`r.len` of them) into region `r`.
    fn copy_in(&mut self, r: Region, bytes: &[u8]) -> Result<()>;
    /// Copies region `r` into `out` (`r.len` bytes), complete on return.
    fn copy_out(&mut self, r: Region, out: &mut [u8]) -> Result<()>;
}

/// Writes the input pattern of `call` for rank `me` of `size` into `fill`, piece by piece.
pub fn fill_pieces(
    mem: &mut impl PieceCopy,
    call: &Call,
    (size, me): (usize, usize),
    fill: Region,
) -> Result<()> {
    for (first, piece) in pieces(fill, call.dtype.size()) {
        let mut host = vec![0u8; piece.len];
        fill_input_from(call, size, me, first, &mut host);
        mem.copy_in(piece, &host)?;
    }
    Ok(())
}

/// The wrong elements of rank `me`'s output of `call` in `check`, read back piece by piece;
/// `uneven` holds the rank's counts of an AllToAllV.
pub fn count_wrong_pieces(
    mem: &mut impl PieceCopy,
    (call, uneven): (&Call, Option<&RankCounts>),
    (size, me): (usize, usize),
    check: Region,
) -> Result<u64> {
    let mut wrong = 0;
    for (first, piece) in pieces(check, call.dtype.size()) {
        let mut out = vec![0u8; piece.len];
        mem.copy_out(piece, &mut out)?;
        let piece = Piece { first, bytes: &out };
        wrong += count_wrong_in_with(call, (size, me), uneven, piece);
    }
    Ok(wrong)
}

#[cfg(test)]
#[path = "placement_tests.rs"]
mod pieces_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::{Algo, DType, Op, ReduceOp, Shape};

    fn point(op: Op, in_place: bool) -> Point {
        let shape = Shape::new(op, DType::F32, 1024, 4);
        let call = Call {
            op,
            algo: Algo::Auto,
            dtype: DType::F32,
            redop: ReduceOp::Sum,
            shape,
            root: 0,
        };
        Point {
            call,
            world: 4,
            nodes: 1,
            pair: None,
            in_place,
            requested: 1024,
            iters: 1,
            warmup: 0,
            timing: Default::default(),
            cycle: 0,
            traffic: None,
            split: None,
            compute: None,
        }
    }

    fn r(buf: Buf, offset: usize, len: usize) -> Region {
        Region { buf, offset, len }
    }

    #[test]
    fn out_of_place_reads_input_and_writes_output() {
        let pl = placement(&point(Op::AllGather, false), 2);
        assert_eq!(pl.send, r(Buf::Input, 0, 256));
        assert_eq!(pl.recv, r(Buf::Output, 0, 1024));
        let pl = placement(&point(Op::ReduceScatter, false), 2);
        assert_eq!(
            (pl.send, pl.recv),
            (r(Buf::Input, 0, 1024), r(Buf::Output, 0, 256))
        );
    }

    #[test]
    fn in_place_follows_nccl_tests_offsets() {
        // AllGather: send = recv + rank * sendcount.
        let pl = placement(&point(Op::AllGather, true), 3);
        assert_eq!(pl.send, r(Buf::Output, 768, 256));
        assert_eq!(pl.recv, r(Buf::Output, 0, 1024));
        assert_eq!((pl.fill, pl.check), (pl.send, pl.recv));
        // ReduceScatter: recv = send + rank * recvcount.
        let pl = placement(&point(Op::ReduceScatter, true), 1);
        assert_eq!(pl.send, r(Buf::Output, 0, 1024));
        assert_eq!(pl.recv, r(Buf::Output, 256, 256));
        for op in [Op::AllReduce, Op::Broadcast, Op::Reduce] {
            let pl = placement(&point(op, true), 2);
            assert_eq!(
                (pl.send, pl.recv),
                (r(Buf::Output, 0, 1024), r(Buf::Output, 0, 1024))
            );
            assert_eq!(pl.output_len, 1024);
        }
    }

    #[test]
    fn buffers_cover_the_largest_point_of_each_placement() {
        let points = [point(Op::AllGather, false), point(Op::ReduceScatter, true)];
        // Out-of-place allgather: 256 in, 1024 out; in-place reducescatter: 1024 in one buffer.
        assert_eq!(buffer_sizes(points.iter()), (256, 1024));
        assert_eq!(buffer_sizes([point(Op::AllReduce, true)].iter()), (0, 1024));
    }

    #[test]
    fn large_regions_are_cut_into_whole_element_pieces() {
        let region = r(Buf::Output, 4096, 2 * HOST_PIECE_BYTES + 10);
        let got: Vec<_> = pieces(region, 2).collect();
        assert_eq!(
            got,
            vec![
                (0, r(Buf::Output, 4096, HOST_PIECE_BYTES)),
                (
                    HOST_PIECE_BYTES / 2,
                    r(Buf::Output, 4096 + HOST_PIECE_BYTES, HOST_PIECE_BYTES)
                ),
                (
                    HOST_PIECE_BYTES,
                    r(Buf::Output, 4096 + 2 * HOST_PIECE_BYTES, 10)
                ),
            ]
        );
        assert_eq!(pieces(r(Buf::Input, 0, 0), 4).count(), 0);
    }
}
