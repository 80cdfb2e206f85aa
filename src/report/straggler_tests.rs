use super::*;

fn it(time_us: f64, slowest_rank: usize, fastest_us: f64) -> IterSample {
    IterSample {
        time_us,
        slowest_rank,
        fastest_us,
    }
}

#[test]
fn a_rank_slowest_far_beyond_chance_is_persistent_and_the_rest_are_not() {
    // 4 ranks, 100 iterations: rank 2 slowest in 90 (10% over the fastest), the others in 10.
    let iters: Vec<IterSample> = (0..100)
        .map(|i| match i % 10 {
            0 => it(10.5, i / 10 % 2, 10.0),
            _ => it(11.0, 2, 10.0),
        })
        .collect();
    let s = analyze(
        &[PointIters {
            world: 4,
            iters: &iters,
            launch_ranks: &[],
            nodes: &[],
        }],
        &[],
    );
    assert_eq!((s.points, s.iterations, s.spikes), (1, 100, 0));
    let top = &s.ranks[0];
    assert_eq!((top.id, top.slowest, top.of), (2, 90, 100));
    assert!((top.expected - 25.0).abs() < 1e-9);
    assert!((top.excess_median - 0.1).abs() < 1e-9 && top.persistent);
    assert!(s.ranks[1..].iter().all(|r| !r.persistent && r.slowest == 5));
    // Never slowest: not listed. One node: no node rows.
    assert_eq!(s.ranks.len(), 3);
    assert!(s.nodes.is_empty());
}

#[test]
fn spikes_are_charged_to_the_rank_slowest_in_them() {
    let mut iters = vec![it(10.0, 0, 9.0); 20];
    iters[7] = it(30.0, 1, 9.0);
    iters[12] = it(20.5, 1, 9.0);
    let s = analyze(
        &[PointIters {
            world: 2,
            iters: &iters,
            launch_ranks: &[],
            nodes: &[],
        }],
        &[],
    );
    assert_eq!(s.spikes, 2);
    let one = s.ranks.iter().find(|r| r.id == 1).unwrap();
    assert_eq!((one.slowest, one.spikes, one.persistent), (2, 2, false));
}

#[test]
fn nodes_add_their_ranks_chances_and_world_1_points_do_not_count() {
    // Ranks 0,1 on node 0 and 2,3 on node 1; rank 3 slowest always.
    let iters = vec![it(12.0, 3, 10.0); 40];
    let alone = [it(20.0, 0, 20.0), it(10.0, 0, 10.0), it(10.0, 0, 10.0)];
    let points = [
        PointIters {
            world: 4,
            iters: &iters,
            launch_ranks: &[],
            nodes: &[],
        },
        PointIters {
            world: 1,
            iters: &alone,
            launch_ranks: &[],
            nodes: &[],
        },
    ];
    let s = analyze(&points, &[0, 0, 1, 1]);
    assert_eq!((s.points, s.iterations), (1, 40));
    assert_eq!(s.nodes.len(), 1);
    let node = &s.nodes[0];
    assert_eq!((node.id, node.slowest, node.of), (1, 40, 40));
    assert!((node.expected - 20.0).abs() < 1e-9 && node.persistent);
    // The first iteration: 20 over 10 for the lone point, 12 over 12 for the other.
    assert_eq!(s.first_iteration, Some((1.5, 2.0)));
}

#[test]
fn nothing_to_analyze_gives_empty_rows() {
    let s = analyze(&[], &[]);
    assert_eq!((s.points, s.ranks.len(), s.first_iteration), (0, 0, None));
    let one = [it(5.0, 0, 5.0)];
    let s = analyze(
        &[PointIters {
            world: 2,
            iters: &one,
            launch_ranks: &[],
            nodes: &[],
        }],
        &[],
    );
    assert_eq!(s.first_iteration, None);
    assert!(
        s.ranks[0].persistent,
        "slowest in its only iteration: 1 > 0.75"
    );
}

#[test]
fn a_point_of_other_ranks_counts_them_by_launch_rank_and_their_own_nodes() {
    // A bisection group: the point's ranks 0 and 1 are launch ranks 2 and 3 on nodes 2 and 3,
    // though the launch's rank_nodes would put ranks 0 and 1 on node 0.
    let iters = [it(11.0, 1, 10.0), it(11.0, 1, 10.0), it(11.0, 0, 10.0)];
    let s = analyze(
        &[PointIters {
            world: 2,
            iters: &iters,
            launch_ranks: &[2, 3],
            nodes: &[2, 3],
        }],
        &[0, 0, 1, 1],
    );
    let ids: Vec<(usize, usize)> = s.ranks.iter().map(|r| (r.id, r.slowest)).collect();
    assert_eq!(ids, [(3, 2), (2, 1)]);
    let nodes: Vec<(usize, usize)> = s.nodes.iter().map(|r| (r.id, r.slowest)).collect();
    assert_eq!(nodes, [(3, 2), (2, 1)]);
}
