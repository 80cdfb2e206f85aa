use proptest::prelude::*;

use super::*;

/// The most any rank sends or receives (the point's size, `uneven::shape`'s `bytes`).
fn busiest(t: &Traffic, p: usize, total: usize) -> usize {
    (t.rank_totals(p, total).into_iter())
        .map(|(s, r)| s.max(r))
        .max()
        .unwrap_or(0)
}

/// Rank 0's sends at 4 ranks.
fn row0(t: &Traffic, total: usize) -> Vec<usize> {
    (0..4).map(|j| t.peer_bytes(0, j, 4, total)).collect()
}

#[test]
fn the_spread_weights_peers_by_distance_as_nccl_tests_does() {
    // nccl-tests' own picture, rank 0 at 4 ranks: nothing to itself, then 1:2:3.
    assert_eq!(row0(&Traffic::Spread(1.0), 960), [0, 160, 320, 480]);
    assert_eq!(row0(&Traffic::Spread(0.0), 960), [240; 4]);
    // Blended: 0.5·480 + 0.5·d·320; and rounded down to 16 bytes: 0.5·240 + 0.5·160 = 200 -> 192.
    assert_eq!(row0(&Traffic::Spread(0.5), 1920), [240, 400, 560, 720]);
    assert_eq!(row0(&Traffic::Spread(0.5), 960), [112, 192, 272, 352]);
    // Rank 2's distance to rank 1 is 3 (in rank order, wrapping).
    assert_eq!(Traffic::Spread(1.0).peer_bytes(2, 1, 4, 960), 480);
    // Every per-peer amount rounds down to 16 bytes: 1000/4 = 250 -> 240.
    assert_eq!(row0(&Traffic::Spread(0.0), 1000), [240; 4]);
    assert_eq!(Traffic::Spread(0.7).peer_bytes(0, 0, 1, 1000), 992);
}

#[test]
fn a_spread_is_balanced_and_its_size_is_one_ranks_total() {
    for s in [0.0, 0.3, 1.0] {
        let t = Traffic::Spread(s);
        let totals = t.rank_totals(5, 1 << 20);
        assert!(totals.iter().all(|&x| x == totals[0]), "{s}: {totals:?}");
        assert_eq!(busiest(&t, 5, 1 << 20), totals[0].0.max(totals[0].1));
        assert!(totals[0].0 <= 1 << 20 && totals[0].0 > (1 << 20) - 5 * ALIGN);
    }
}

#[test]
fn sizes_and_busbw_follow_nccl_tests() {
    // 1 MiB of f32 at 3 ranks: 87381 elements per peer, down to 87380 (4 per 16 bytes).
    assert_eq!(generated_total_bytes(1 << 20, 4, 3), 87380 * 3 * 4);
    // bf16: 8 elements per chunk.
    assert_eq!(generated_total_bytes(1000, 2, 4), 120 * 4 * 2);
    // The most loaded rank's 1 GB in 1 s: algbw 1 GB/s, busbw 3/4 of it at 4 ranks.
    let op = crate::collective::Op::AllToAllV;
    let algbw = crate::collective::algbw_gbps(op, 1_000_000_000, 4, 1e6);
    assert!((crate::collective::busbw_gbps(op, 4, algbw) - 0.75).abs() < 1e-12);
    assert_eq!(crate::collective::busbw_gbps(op, 1, algbw), 0.0);
}

#[test]
fn nccl_tests_example_matrix_is_read_aligned_and_scaled() {
    let text = "100  200  150\n50   100  75\n300  150  200\n";
    let t = parse_bytes_matrix(text, 1.0).unwrap();
    let cells = [96, 192, 144, 48, 96, 64, 288, 144, 192];
    assert_eq!(
        t,
        Traffic::Bytes {
            dim: 3,
            cells: cells.to_vec()
        }
    );
    // Sent, received: rank 2 sends the most (624 bytes): the point's size.
    assert_eq!(t.rank_totals(3, 0), [(432, 432), (208, 432), (624, 400)]);
    assert_eq!(busiest(&t, 3, 0), 624);
    // The first 2 ranks of a larger matrix.
    assert_eq!(busiest(&t, 2, 0), 288);
    let doubled = parse_bytes_matrix(text, 2.0).unwrap();
    assert_eq!(doubled.peer_bytes(1, 2, 3, 0), 144);
    assert!(!t.sweeps() && t.max_ranks() == Some(3));
}

#[test]
fn bad_matrices_are_refused_in_one_line_naming_the_place() {
    for (text, says) in [
        ("", "empty"),
        ("# only a comment\n", "empty"),
        ("1 2\n3\n", "row 2 has 1 values"),
        ("1 2 3\n4 5 6\n", "row 1 has 3 values"),
        ("1 -2\n3 4\n", "row 1, column 2: -2"),
        ("1 2\nnan 4\n", "row 2, column 1: NaN"),
        ("1 inf\n3 4\n", "row 1, column 2: inf"),
        ("1 2\n3 x\n", "row 2, column 2: \"x\" is not a number"),
        ("0 0\n15 0\n", "every cell is 0"),
        ("1e300 0\n0 0\n", "overflows"),
    ] {
        let e = parse_bytes_matrix(text, 1.0).unwrap_err();
        assert!(e.contains(says), "{text:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    assert!(parse_bytes_matrix("16", -1.0)
        .unwrap_err()
        .contains("scale -1"));
    let tall = "16\n".repeat(MAX_DIM + 1);
    assert!(parse_bytes_matrix(&tall, 1.0)
        .unwrap_err()
        .contains("more than 1024"));
}

#[test]
fn ranks_the_pattern_does_not_describe_are_refused_and_never_read() {
    let t = parse_bytes_matrix("100 200 150\n50 100 75\n300 150 200\n", 1.0).unwrap();
    assert!(t.check_ranks(3).is_ok() && t.check_ranks(2).is_ok());
    assert!(t
        .check_ranks(4)
        .unwrap_err()
        .contains("3 rows, fewer than the 4 ranks"));
    assert_eq!((t.peer_bytes(0, 3, 4, 0), t.peer_bytes(3, 0, 4, 0)), (0, 0));
    let f = parse_fraction_csv("0.5,0.5\n0.5,0.5\n").unwrap();
    assert!(f.check_ranks(3).is_err() && f.check_ranks(1).is_err() && f.check_ranks(2).is_ok());
    assert!(Traffic::Spread(1.0).check_ranks(0).is_err());
    assert_eq!(Traffic::Spread(1.0).peer_bytes(0, 0, 0, 1024), 0);
    // Cells near the largest size: totals saturate rather than overflow.
    let huge = Traffic::Bytes {
        dim: 2,
        cells: vec![usize::MAX & !15; 4],
    };
    assert_eq!(busiest(&huge, 2, 0), usize::MAX);
}

#[test]
fn fractions_are_shares_of_each_senders_total() {
    let t = parse_fraction_csv("0, 0.5, 0.5\n0.25,0.25,0.5\n1,0,0\n").unwrap();
    assert_eq!(t.peer_bytes(1, 2, 3, 1024), 512);
    assert_eq!(t.peer_bytes(1, 0, 3, 1000), 240);
    // Rank 0 receives 0.25·T from rank 1 and all of rank 2's: the most loaded.
    assert_eq!(busiest(&t, 3, 1600), 400 + 1600);
    assert!(t.sweeps());
    for (text, says) in [
        ("0.5,0.4\n0.5,0.5\n", "row 1 sums to 0.9"),
        ("0.5,0.5\n1.5,-0.5\n", "row 2, column 2: -0.5"),
        ("0.5,0.5\n2,0\n", "row 2, column 1: 2 is more than 1"),
        ("0.5;0.5\n0.5,0.5\n", "row 1 has 1 values"),
        ("1,0\n0,1,0\n", "row 2 has 3 values"),
    ] {
        let e = parse_fraction_csv(text).unwrap_err();
        assert!(e.contains(says), "{text:?}: {e}");
    }
    assert!(spread(1.01).unwrap_err().contains("spread 1.01"));
    assert!(spread(f64::NAN).is_err() && spread(0.0).is_ok());
}

proptest! {
    /// A matrix of byte counts reads back as those counts rounded down to 16 bytes.
    #[test]
    fn any_square_matrix_reads_back(dim in 1usize..6, seed in proptest::collection::vec(0u32..100_000, 36)) {
        let values: Vec<usize> = (0..dim * dim).map(|k| seed[k] as usize + 16).collect();
        let text: String = values
            .chunks(dim)
            .map(|row| row.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" ") + "\n")
            .collect();
        let t = parse_bytes_matrix(&text, 1.0).unwrap();
        let want: Vec<usize> = values.iter().map(|v| v & !15).collect();
        prop_assert_eq!(t, Traffic::Bytes { dim, cells: want });
    }

    /// A near-valid file (a byte changed, dropped or added anywhere) is read or refused in
    /// one line, never a panic.
    #[test]
    fn near_valid_matrices_never_panic(at in 0usize..40, byte in any::<u8>(), how in 0u8..3) {
        let valid = "100 200 150\n50 100 75\n300 150 200\n";
        let csv = "0,0.5,0.5\n0.25,0.25,0.5\n1,0,0\n";
        for base in [valid, csv] {
            let mut b = base.as_bytes().to_vec();
            let i = at % b.len();
            match how {
                0 => b[i] = byte,
                1 => { b.remove(i); }
                _ => b.insert(i, byte),
            }
            let text = String::from_utf8_lossy(&b);
            for result in [parse_bytes_matrix(&text, 1.0), parse_fraction_csv(&text)] {
                if let Err(e) = result {
                    prop_assert!(!e.contains('\n') && !e.is_empty(), "{}", e);
                }
            }
        }
    }
}

#[test]
fn a_matrix_whose_rank_moves_more_than_a_tebibyte_is_refused() {
    let big = format!("0 {}\n16 0\n", 1u64 << 40);
    assert!(parse_bytes_matrix(&big, 1.0).is_ok());
    let e = parse_bytes_matrix(&big, 2.0).unwrap_err();
    assert!(e.contains("rank 0 sends more than"), "{e}");
    let e = parse_bytes_matrix(&format!("0 16\n{} 0\n", 1u64 << 41), 1.0).unwrap_err();
    assert!(
        e.contains("rank 1 sends") || e.contains("rank 0 receives"),
        "{e}"
    );
}
