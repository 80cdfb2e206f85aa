use super::*;

#[test]
fn subtrees_partition_the_ranks_below_each_parent() {
    for n in 1..=17 {
        assert_eq!(subtree_blocks(0, n), n);
        for v in 1..n {
            let blocks = subtree_blocks(v, n);
            assert!(blocks >= 1 && v + blocks <= n, "n {n} v {v}");
            // A subtree is the rank and its children's subtrees, back to back.
            let mut next = v + 1;
            let mut mask = 1;
            while mask < blocks {
                assert_eq!(v + mask, next, "n {n} v {v}");
                next += subtree_blocks(v + mask, n);
                mask <<= 1;
            }
            assert_eq!(next, v + blocks, "n {n} v {v}");
        }
    }
    assert_eq!(subtree_blocks(4, 6), 2);
    assert_eq!(subtree_blocks(4, 8), 4);
    assert_eq!(subtree_blocks(6, 7), 1);
}

#[test]
fn the_root_comes_first_seen_from_it() {
    let g = Group {
        members: vec![10, 11, 12, 13, 14],
        me: 1,
    };
    let r = FromRoot::new(&g, 3);
    let seen: Vec<usize> = (0..5).map(|v| r.member(v)).collect();
    assert_eq!(seen, vec![13, 14, 10, 11, 12]);
    assert_eq!((r.me(), r.member(r.me())), (3, 11));
    let zero = FromRoot::new(&g, 0);
    assert_eq!((zero.me(), zero.member(4)), (1, 14));
    assert_eq!(FromRoot::new(&g, 1).me(), 0);
    // A root past the size wraps.
    assert_eq!(FromRoot::new(&g, 8).member(0), 13);
}
