//! The fill and check loops of a GPU point, run on host memory: a point of several
//! [`HOST_PIECE_BYTES`] pieces is filled and checked piece by piece exactly as on a device, and
//! agrees with the whole-buffer fill and checker; a wrong element in any piece is counted once.

use super::*;
use crate::check::fill_input;
use crate::collective::{Algo, DType, Op, ReduceOp, Shape};

/// Two host buffers standing for a rank's device input and output.
struct HostMem {
    input: Vec<u8>,
    output: Vec<u8>,
}

impl HostMem {
    fn buf(&mut self, r: Region) -> &mut [u8] {
        let b = match r.buf {
            Buf::Input => &mut self.input,
            Buf::Output => &mut self.output,
        };
        &mut b[r.offset..r.offset + r.len]
    }
}

impl PieceCopy for HostMem {
    fn copy_in(&mut self, r: Region, bytes: &[u8]) -> Result<()> {
        self.buf(r).copy_from_slice(bytes);
        Ok(())
    }

    fn copy_out(&mut self, r: Region, out: &mut [u8]) -> Result<()> {
        out.copy_from_slice(self.buf(r));
        Ok(())
    }
}

fn allgather_point(bytes: usize, world: usize, in_place: bool) -> Point {
    let shape = Shape::new(Op::AllGather, DType::BF16, bytes, world);
    let call = Call {
        op: Op::AllGather,
        algo: Algo::Auto,
        dtype: DType::BF16,
        redop: ReduceOp::Sum,
        shape,
        root: 0,
    };
    Point {
        call,
        world,
        nodes: 1,
        pair: None,
        in_place,
        requested: bytes,
        iters: 1,
        warmup: 0,
        timing: Default::default(),
        cycle: 0,
        traffic: None,
        split: None,
        compute: None,
    }
}

#[test]
fn a_multi_piece_point_is_filled_and_checked_piece_by_piece_as_a_whole() {
    // 2 ranks: the 128 MiB + 4 KiB output spans three 64 MiB pieces, the last one short.
    let (world, bytes) = (2, 2 * HOST_PIECE_BYTES + 4096);
    for in_place in [false, true] {
        let p = allgather_point(bytes, world, in_place);
        let c = &p.call;
        let (in_len, out_len) = buffer_sizes(std::iter::once(&p));
        let mut ranks: Vec<HostMem> = (0..world)
            .map(|_| HostMem {
                input: vec![0; in_len],
                output: vec![0xff; out_len],
            })
            .collect();
        for (me, mem) in ranks.iter_mut().enumerate() {
            let pl = placement(&p, me);
            fill_pieces(mem, c, (world, me), pl.fill).unwrap();
            let mut whole = vec![0u8; pl.fill.len];
            fill_input(c, world, me, &mut whole);
            assert_eq!(
                mem.buf(pl.fill),
                &whole[..],
                "in place {in_place}: rank {me}"
            );
        }
        // The gather itself, on the host: every rank's block into rank 1's output.
        let blocks: Vec<Vec<u8>> = (0..world)
            .map(|r| ranks[r].buf(placement(&p, r).fill).to_vec())
            .collect();
        let check = placement(&p, 1).check;
        let out = ranks[1].buf(check);
        for (r, block) in blocks.iter().enumerate() {
            out[r * block.len()..(r + 1) * block.len()].copy_from_slice(block);
        }
        assert!(pieces(check, 2).count() >= 3, "{check:?}");
        let by_pieces =
            |mem: &mut HostMem| count_wrong_pieces(mem, (c, None), (world, 1), check).unwrap();
        assert_eq!(by_pieces(&mut ranks[1]), 0, "in place {in_place}");
        // One wrong element in the third piece, one in the last element.
        let third = 2 * HOST_PIECE_BYTES + 100;
        let last = check.len - 2;
        for at in [third, last] {
            ranks[1].buf(check)[at] ^= 0x40;
        }
        assert_eq!(by_pieces(&mut ranks[1]), 2, "in place {in_place}");
    }
}
