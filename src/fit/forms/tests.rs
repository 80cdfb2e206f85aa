use super::*;

#[test]
fn step_counts() {
    let c: Vec<f64> = [1, 2, 3, 4, 5, 8, 9]
        .iter()
        .map(|&p| ceil_log2(p))
        .collect();
    assert_eq!(c, [0.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0]);
    let d: Vec<f64> = [1, 2, 3, 4, 6, 8]
        .iter()
        .map(|&p| doubling_steps(p))
        .collect();
    assert_eq!(d, [0.0, 1.0, 3.0, 2.0, 4.0, 3.0]);
}

#[test]
fn halving_doubling_and_neighbor_exchange_coefficients() {
    // 8 ranks, 1 MB: Bruck 3 steps moving 7/8 MB; Rabenseifner twice that.
    let hd = Form::HalvingDoubling;
    assert_eq!(
        hd.coefficients(Op::AllGather, 8, 1, 1e6).unwrap(),
        vec![3.0, 875.0]
    );
    assert_eq!(
        hd.coefficients(Op::AllReduce, 8, 1, 1e6).unwrap(),
        vec![6.0, 1750.0]
    );
    assert!(hd.coefficients(Op::Broadcast, 8, 1, 1e6).is_none());
    let ne = Form::NeighborExchange;
    assert_eq!(
        ne.coefficients(Op::AllGather, 8, 1, 1e6).unwrap(),
        vec![4.0, 875.0]
    );
    assert!(!ne.covers(Op::AllReduce));
    for f in [hd, ne] {
        assert_eq!(Form::from_name(f.name()), Some(f));
    }
    assert_eq!(Form::for_algo(Algo::Rabenseifner), hd);
}

#[test]
fn ring_coefficients_follow_the_busbw_factors() {
    // 8 ranks, 1 MB: AllGather moves 7/8 MB per rank over 7 steps.
    let ag = Form::Ring.coefficients(Op::AllGather, 8, 1, 1e6).unwrap();
    assert_eq!(ag, vec![7.0, 875.0]);
    let ar = Form::Ring.coefficients(Op::AllReduce, 8, 1, 1e6).unwrap();
    assert_eq!(ar, vec![14.0, 1750.0]);
    assert!(Form::Ring.coefficients(Op::Broadcast, 8, 1, 1e6).is_none());
}

#[test]
fn two_level_reduces_to_ring_on_one_node_and_splits_network_share() {
    let one = Form::TwoLevel
        .coefficients(Op::AllGather, 8, 1, 1e6)
        .unwrap();
    assert_eq!(one, vec![7.0, 875.0, 0.0, 0.0]);
    // 4 nodes × 8 ranks: 7 intra steps, 3 inter steps carrying 3/4 × 1 MB / 8 per rank.
    let c = Form::TwoLevel
        .coefficients(Op::AllReduce, 32, 4, 1e6)
        .unwrap();
    assert_eq!(c, vec![14.0, 1750.0, 6.0, 187.5]);
    assert!(Form::TwoLevel
        .coefficients(Op::AllGather, 6, 4, 1.0)
        .is_none());
}

#[test]
fn names_round_trip_and_parameters_match_coefficients() {
    for &f in Form::ALL {
        assert_eq!(Form::from_name(f.name()), Some(f));
        assert!(!f.formula(Op::AllReduce).is_empty());
        // Neighbor exchange is an AllGather and pairwise exchange an AllToAll schedule only.
        let single_op = [
            Form::NeighborExchange,
            Form::Pairwise,
            Form::Bruck,
            Form::Direct,
            Form::Linear,
            Form::Binomial,
        ];
        assert!(f.covers(Op::AllReduce) || single_op.contains(&f), "{f:?}");
        assert_eq!(f.param_names().len(), f.coefficients_len(), "{f:?}");
    }
    assert!(Form::Tree.covers(Op::Broadcast) && !Form::TwoLevel.covers(Op::Broadcast));
    assert!(Form::Pairwise.covers(Op::AllToAll) && !Form::Ring.covers(Op::AllToAll));
    assert!(Form::Linear.covers(Op::Gather) && Form::Binomial.covers(Op::Scatter));
    assert!(!Form::Binomial.covers(Op::AllReduce) && !Form::Tree.covers(Op::Gather));
    // 5 ranks, 1 MB: the root's 4 messages (3 binomial rounds) and its 4/5 of S.
    let lin = Form::Linear.coefficients(Op::Gather, 5, 1, 1e6).unwrap();
    assert_eq!(lin, vec![4.0, 800.0]);
    let bin = Form::Binomial.coefficients(Op::Scatter, 5, 1, 1e6).unwrap();
    assert_eq!(bin, vec![3.0, 800.0]);
    // 8 ranks, 1 MB: 7 exchanges of 125 kB.
    let c = Form::Pairwise
        .coefficients(Op::AllToAll, 8, 1, 1e6)
        .unwrap();
    assert_eq!(c, vec![7.0, 875.0]);
    // The linear AllToAll sends the same p-1 blocks, all at once.
    let lin = Form::Linear.coefficients(Op::AllToAll, 8, 1, 1e6);
    assert_eq!(lin, Some(vec![7.0, 875.0]));
    // SendRecv: one message of S whatever p.
    let c = Form::Direct.coefficients(Op::SendRecv, 8, 1, 1e6).unwrap();
    assert_eq!(c, vec![1.0, 1000.0]);
    let names: std::collections::BTreeSet<&str> = Form::ALL.iter().map(|f| f.name()).collect();
    assert_eq!(names.len(), Form::ALL.len());
}

#[test]
fn bruck_alltoall_counts_the_blocks_it_forwards() {
    // Σ_{i<p} popcount(i): p = 6 sends {1,3,5}, {2,3}, {4,5}: 7 blocks.
    let blocks: Vec<usize> = (1..=9).map(bruck_blocks).collect();
    assert_eq!(blocks, [0, 1, 2, 4, 5, 7, 9, 12, 13]);
    for p in 1..=64usize {
        let bits: usize = (0..p).map(|i| i.count_ones() as usize).sum();
        assert_eq!(bruck_blocks(p), bits, "p = {p}");
        // The host algorithm's own schedule sends exactly these.
        use crate::backend::host::algo::bruck;
        let sent: usize = (0..bruck::steps(p))
            .flat_map(|k| bruck::step_runs(p, k))
            .map(|run| run.len())
            .sum();
        assert_eq!(sent, bits, "p = {p}");
        assert_eq!(bruck::steps(p) as f64, ceil_log2(p), "p = {p}");
        if p.is_power_of_two() {
            // Thakur et al. 2005: lg p·alpha + (n/2)·lg p·beta.
            assert_eq!(2 * bits, p * p.trailing_zeros() as usize, "p = {p}");
        }
    }
    let b = Form::Bruck;
    // 8 ranks, 1 MB: 3 steps of 4 blocks of 125 kB, 1.5 MB in all (pairwise: 7 steps, 875 kB).
    assert_eq!(
        b.coefficients(Op::AllToAll, 8, 1, 1e6).unwrap(),
        vec![3.0, 1500.0]
    );
    // 5 ranks: 3 steps, 5 blocks of 200 kB; 6 ranks: 3 steps, 7 blocks of S/6.
    assert_eq!(
        b.coefficients(Op::AllToAll, 5, 1, 1e6).unwrap(),
        vec![3.0, 1000.0]
    );
    assert_eq!(
        b.coefficients(Op::AllToAll, 6, 1, 6e3).unwrap(),
        vec![3.0, 7.0]
    );
    assert_eq!(
        b.coefficients(Op::AllToAll, 2, 2, 1e3).unwrap(),
        vec![1.0, 0.5]
    );
    assert!(b.covers(Op::AllToAll) && !b.covers(Op::AllGather) && !b.covers(Op::AllReduce));
    assert_eq!(Form::from_name("bruck"), Some(b));
    assert_eq!(b.param_names(), ["alpha_us", "beta_ns_per_byte"]);
    assert!(b.formula(Op::AllToAll).contains("popcount"));
    // Bruck's AllGather keeps the halving-doubling shape; its AllToAll gets its own.
    let covering = |op, multi| -> Vec<Form> {
        Form::candidates(Algo::Bruck, multi)
            .into_iter()
            .filter(|f| f.covers(op))
            .collect()
    };
    assert_eq!(covering(Op::AllToAll, false), [b, Form::LogLinear]);
    assert_eq!(covering(Op::AllToAll, true), [b, Form::LogLinear]);
    assert_eq!(
        covering(Op::AllGather, false),
        [Form::HalvingDoubling, Form::LogLinear]
    );
    assert_eq!(
        covering(Op::AllGather, true),
        [Form::TwoLevel, Form::HalvingDoubling, Form::LogLinear]
    );
}

impl Form {
    /// The coefficient count on the first (op, layout) the form describes.
    fn coefficients_len(self) -> usize {
        Op::ALL
            .iter()
            .flat_map(|&op| [(op, 1), (op, 2)])
            .find_map(|(op, n)| self.coefficients(op, 8, n, 1e3))
            .map_or(0, |c| c.len())
    }
}
