//! What one alltoallv call moves: the shape nccl-tests gives a point of a pattern, and each
//! rank's counts and displacements (what `MPI_Alltoallv` takes, and what nccl-tests' grouped
//! `ncclSend`/`ncclRecv` walk through).
//!
//! nccl-tests 2.19 (src/alltoallv.cu): the requested size is the per-rank total T of a
//! generated pattern, cut to whole 16-byte chunks per peer ([`generated_total_bytes`]); its
//! `count` column is T's elements over p; its `size` column, and the bytes of its bandwidths,
//! the most any rank sends or receives. Every rank's buffers are as long as the most any rank
//! sends (input) or receives (output). A rank's sends sit packed in peer order in its input,
//! its receives packed in source order in its output.

use super::traffic::{generated_total_bytes, Traffic};
use super::{DType, Shape};

/// The shape of an alltoallv point of `traffic` at `p` ranks for a requested size: `bytes` the
/// most any rank sends or receives (0 where nothing is sent), `count` the elements of the
/// per-rank total (0 for a bytes matrix, whose sizes do not sweep), `count_per_rank` that over
/// `p` (nccl-tests' `count`), `in_bytes` and `out_bytes` the most any rank sends and receives.
pub fn shape(traffic: &Traffic, dtype: DType, requested: usize, p: usize) -> Shape {
    let el = dtype.size();
    let p = p.max(1);
    let total = match traffic.sweeps() {
        true => generated_total_bytes(requested, el, p),
        false => 0,
    };
    let totals = traffic.rank_totals(p, total);
    let in_bytes = totals.iter().map(|t| t.0).max().unwrap_or(0);
    let out_bytes = totals.iter().map(|t| t.1).max().unwrap_or(0);
    Shape {
        bytes: in_bytes.max(out_bytes),
        count: total / el,
        count_per_rank: total / el / p,
        in_bytes,
        out_bytes,
    }
}

/// The per-rank total a point of `shape` was generated from (its `count` in bytes).
pub fn total_of(shape: &Shape, dtype: DType) -> usize {
    shape.count * dtype.size()
}

/// One rank's part of an alltoallv call, in elements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankCounts {
    /// Elements sent to each peer, in peer order.
    pub send: Vec<usize>,
    /// Where each peer's elements start in the input (packed in peer order).
    pub send_displ: Vec<usize>,
    /// Elements received from each peer.
    pub recv: Vec<usize>,
    /// Where each peer's elements start in the output (packed in source order).
    pub recv_displ: Vec<usize>,
    /// Where this rank's elements start in each source's input: the expected values' index.
    pub src_offset: Vec<usize>,
}

impl RankCounts {
    /// Rank `rank`'s counts among `p` ranks of `traffic`, every rank sending `total` bytes in
    /// a generated pattern, for elements of `el` bytes. O(p · rank) for the offsets.
    pub fn of(traffic: &Traffic, (p, rank): (usize, usize), total: usize, el: usize) -> RankCounts {
        let el = el.max(1);
        let elems = |i: usize, j: usize| traffic.peer_bytes(i, j, p, total) / el;
        let send: Vec<usize> = (0..p).map(|j| elems(rank, j)).collect();
        let recv: Vec<usize> = (0..p).map(|i| elems(i, rank)).collect();
        let src_offset = (0..p)
            .map(|src| (0..rank).map(|k| elems(src, k)).sum())
            .collect();
        RankCounts {
            send_displ: displacements(&send),
            recv_displ: displacements(&recv),
            send,
            recv,
            src_offset,
        }
    }

    /// Elements this rank receives in all: its defined output.
    pub fn received(&self) -> usize {
        self.recv.iter().sum()
    }
}

/// Where each block starts when blocks of `counts` lie packed in order.
fn displacements(counts: &[usize]) -> Vec<usize> {
    let mut at = 0;
    (counts.iter())
        .map(|&c| {
            let start = at;
            at += c;
            start
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collective::traffic::parse_bytes_matrix;

    /// nccl-tests' 3-rank example matrix (its alltoallv.cu comment): rank 2 sends the most.
    #[test]
    fn a_matrix_point_is_sized_by_its_busiest_rank() {
        let t = parse_bytes_matrix("100 200 150\n50 100 75\n300 150 200\n", 1.0).unwrap();
        let s = shape(&t, DType::F32, 1 << 20, 3);
        assert_eq!((s.bytes, s.count, s.count_per_rank), (624, 0, 0));
        // Aligned: [96 192 144; 48 96 64; 288 144 192]; sends 432, 208, 624; receives
        // 432, 432, 400.
        assert_eq!((s.in_bytes, s.out_bytes), (624, 432));
    }

    #[test]
    fn a_spread_point_is_the_generated_total() {
        let s = shape(&Traffic::Spread(0.0), DType::F32, 1 << 20, 4);
        assert_eq!(
            (s.bytes, s.count, s.count_per_rank),
            (1 << 20, 1 << 18, 1 << 16)
        );
        // Full spread at 4 ranks: distances 0..3 of 6 share T; 4096·d/6 rounds down per peer.
        let s = shape(&Traffic::Spread(1.0), DType::F32, 4096, 4);
        let expected = (1..4).map(|d| (d * 4096 / 6) & !15).sum::<usize>();
        assert_eq!(
            (s.bytes, s.in_bytes, s.out_bytes),
            (expected, expected, expected)
        );
    }

    #[test]
    fn counts_pack_sends_and_receives_and_find_each_source_offset() {
        let t = parse_bytes_matrix("16 32 48\n64 80 96\n112 128 144\n", 1.0).unwrap();
        let c = RankCounts::of(&t, (3, 1), 0, 4);
        assert_eq!(c.send, [16, 20, 24]);
        assert_eq!(c.send_displ, [0, 16, 36]);
        assert_eq!(c.recv, [8, 20, 32]);
        assert_eq!(c.recv_displ, [0, 8, 28]);
        // Rank 1's elements start after each source's elements for rank 0.
        assert_eq!(c.src_offset, [4, 16, 28]);
        assert_eq!((c.send.iter().sum::<usize>(), c.received()), (60, 60));
    }

    /// What every rank sends one peer, that peer receives from it: the counts of all ranks
    /// agree, for every pattern and world.
    #[test]
    fn every_send_meets_its_receive() {
        for t in [Traffic::Spread(0.3), Traffic::Spread(1.0)] {
            for p in 1..7 {
                let all: Vec<RankCounts> = (0..p)
                    .map(|r| RankCounts::of(&t, (p, r), 4096, 2))
                    .collect();
                for i in 0..p {
                    for j in 0..p {
                        assert_eq!(all[i].send[j], all[j].recv[i], "{t:?} p {p} {i}->{j}");
                    }
                }
            }
        }
    }
}
